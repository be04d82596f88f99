from worker.cli import app

app(prog_name="poolq")

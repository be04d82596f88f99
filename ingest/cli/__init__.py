"""What the client's commands do (``poolq enqueue``, ``poolq status``, ``poolq dlq``, ``poolq
reindex``, ``poolq search``): read and check the input, call the client, print, and return the
exit status. The command line itself (flags, help, the Typer app) is ``worker/cli``, which
registers these commands; nothing here imports Typer, the worker, torch or a store."""

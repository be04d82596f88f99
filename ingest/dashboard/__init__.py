"""``poolq dashboard``: a web view of the queue, the workers and the store, on the records the
client reads (no second source of truth): :mod:`.overview` (the live tick), :mod:`.jobs`,
:mod:`.api`, :mod:`.pages`, :mod:`.auth` (token and headers), :mod:`.app` (the Starlette
application and its server). Needs the ``dashboard`` extra (Starlette, uvicorn, Jinja2)."""

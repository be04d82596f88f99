"""``python -m poolq.worker``: the ``poolq`` command line."""

import os
if os.environ.get("GCSTAT"):
    import gc, sys, threading, time
    _acc = {"s": 0.0, "n": [0, 0, 0], "t0": 0.0}
    def _cb(phase, info):
        if phase == "start":
            _acc["t0"] = time.perf_counter()
        else:
            _acc["s"] += time.perf_counter() - _acc["t0"]; _acc["n"][info["generation"]] += 1
    gc.callbacks.append(_cb)
    def _rep():
        while True:
            time.sleep(3); print("GCSTAT", round(_acc["s"], 3), _acc["n"], len(gc.get_objects()), file=sys.stderr, flush=True)
    threading.Thread(target=_rep, daemon=True).start()
    if os.environ.get("GCSTAT") == "freeze":
        _freeze = True
from poolq.worker.cli import main

main()

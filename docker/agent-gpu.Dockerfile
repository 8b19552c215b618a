# A GPU device agent: CUDA devel base (nvcc for kernels), pycuda built against it at image build time.
FROM nvidia/cuda:13.0.0-devel-ubuntu24.04
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv python3-dev gcc g++ \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH CUDA_ROOT=/usr/local/cuda
WORKDIR /app
COPY pyproject.toml README.md ./
COPY compiler_core compiler_core
COPY tuner_server tuner_server
COPY device_agent device_agent
COPY tunefarm_cli tunefarm_cli
COPY tunefarm_proto tunefarm_proto
COPY tunefarm_client tunefarm_client
RUN pip install --no-cache-dir '.[gpu]'
CMD ["sh", "-c", "exec tunefarm agent --server \"$TUNEFARM_SERVER\" --device \"cuda:${TUNEFARM_GPU_INDEX:-0}\" --token-file /run/secrets/enrolment_token --lock-dir \"${TUNEFARM_LOCK_DIR:-/tmp}\""]

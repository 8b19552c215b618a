# A GPU device agent: CUDA devel base (nvcc for kernels), pycuda built against it at image build time. Only the
# agent's packages (pyproject.toml's `agent` and `gpu` extras). Runs as uid 10001: the NVIDIA container toolkit
# makes the GPU device nodes usable by any user.
FROM nvidia/cuda:13.0.0-devel-ubuntu24.04
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv python3-dev gcc g++ \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --create-home --shell /usr/sbin/nologin tunefarm
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH CUDA_ROOT=/usr/local/cuda
WORKDIR /app
COPY pyproject.toml README.md ./
COPY docker/role_requirements.py docker/
RUN python docker/role_requirements.py agent gpu > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt && rm /tmp/requirements.txt
COPY compiler_core compiler_core
COPY device_agent device_agent
COPY tunefarm_cli tunefarm_cli
COPY tunefarm_proto tunefarm_proto
RUN pip install --no-cache-dir --no-deps .
# grpc.health.v1 on this port, SERVING once registered (probe: python -m device_agent.health)
ENV TUNEFARM_HEALTH_PORT=8081
USER tunefarm
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=5 CMD ["python", "-m", "device_agent.health"]
# One GPU per container: compose reserves one host GPU (device_ids), which the container sees as cuda:0.
CMD ["sh", "-c", "exec tunefarm agent --server \"$TUNEFARM_SERVER\" --device \"cuda:${TUNEFARM_GPU_INDEX:-0}\" --token-file /run/secrets/enrolment_token --lock-dir \"${TUNEFARM_LOCK_DIR:-/tmp}\""]

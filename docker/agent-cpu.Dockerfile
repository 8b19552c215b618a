# A CPU device agent: compiles generated C with the host compiler (gcc + OpenMP) and measures it. Only the agent's
# packages (pyproject.toml's `agent` extra): no web stack, database drivers or cost model. Runs as uid 10001.
FROM python:3.11.13-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev libgomp1 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --create-home --shell /usr/sbin/nologin tunefarm
WORKDIR /app
COPY pyproject.toml README.md ./
COPY docker/role_requirements.py docker/
RUN python docker/role_requirements.py agent > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt && rm /tmp/requirements.txt
COPY compiler_core compiler_core
COPY device_agent device_agent
COPY tunefarm_cli tunefarm_cli
COPY tunefarm_proto tunefarm_proto
RUN pip install --no-cache-dir --no-deps .
# grpc.health.v1 on this port, SERVING once registered (probe: python -m device_agent.health)
ENV TUNEFARM_HEALTH_PORT=8081
USER tunefarm
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=5 CMD ["python", "-m", "device_agent.health"]
CMD ["sh", "-c", "exec tunefarm agent --server \"$TUNEFARM_SERVER\" --device cpu --token-file /run/secrets/enrolment_token --lock-dir \"${TUNEFARM_LOCK_DIR:-/tmp}\""]

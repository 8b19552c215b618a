# A CPU device agent: compiles generated C with the host compiler (gcc + OpenMP) and measures it.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev libgomp1 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY compiler_core compiler_core
COPY tuner_server tuner_server
COPY device_agent device_agent
COPY tunefarm_cli tunefarm_cli
COPY tunefarm_proto tunefarm_proto
COPY tunefarm_client tunefarm_client
RUN pip install --no-cache-dir . && useradd --create-home tunefarm
USER tunefarm
CMD ["sh", "-c", "exec tunefarm agent --server \"$TUNEFARM_SERVER\" --device cpu --token-file /run/secrets/enrolment_token --lock-dir \"${TUNEFARM_LOCK_DIR:-/tmp}\""]

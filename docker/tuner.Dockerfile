# The tuner server: REST + gRPC over one database; applies migrations on start. Runs as uid 10001 (tunefarm) and
# writes only to the volume /var/lib/tunefarm (cost models, caches; the SQLite database when no URL is given).
FROM python:3.11.13-slim-bookworm
RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin tunefarm \
    && install -d -o tunefarm -g tunefarm /var/lib/tunefarm
WORKDIR /app
COPY pyproject.toml README.md ./
COPY docker/role_requirements.py docker/
RUN python docker/role_requirements.py tuner > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt && rm /tmp/requirements.txt
COPY compiler_core compiler_core
COPY tuner_server tuner_server
COPY tunefarm_cli tunefarm_cli
COPY tunefarm_proto tunefarm_proto
COPY tunefarm_client tunefarm_client
RUN pip install --no-cache-dir --no-deps .
ENV TUNEFARM_DATA_DIR=/var/lib/tunefarm \
    TUNEFARM_DATABASE_URL=sqlite:////var/lib/tunefarm/tunefarm.db \
    TUNEFARM_REST_HOST=0.0.0.0 \
    TUNEFARM_GRPC_HOST=0.0.0.0
VOLUME /var/lib/tunefarm
USER tunefarm
EXPOSE 8080 50051
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=5 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/health', timeout=2)"]
CMD ["tunefarm", "server"]

# The tuner server: REST + gRPC over one database; applies migrations on start.
FROM python:3.11-slim
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
EXPOSE 8080 50051
HEALTHCHECK --interval=10s --timeout=3s --retries=5 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/health')"
CMD ["tunefarm", "server"]

"""schemathesis hooks for tests/farm/test_rest_fuzz.py (SCHEMATHESIS_HOOKS): POST /v1/import's body is JSON lines
(application/x-ndjson), text that schemathesis sends as it sends text/plain."""
import schemathesis

schemathesis.serializer.alias("application/x-ndjson", "text/plain")

"""One router per resource; `ROUTERS` is the table app.py includes, in documentation order."""
from tuner_server.api.routes import agents, best, devices, exchange, health, jobs, metrics, ops, tokens

ROUTERS = (health.router, ops.router, devices.router, agents.router, jobs.router, best.router, exchange.router,
           tokens.router, metrics.router)

__all__ = ["ROUTERS"]

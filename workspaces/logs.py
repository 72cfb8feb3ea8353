"""JSON log lines carrying the request id, one per event, for the log pipeline to index.

The ASGI router gives every HTTP request an id (the caller's `X-Request-ID` when it is a sane
token, else a fresh one), returns it in the `X-Request-ID` response header and keeps it in a
context variable that Django's and the MCP app's threads inherit, so every line logged while
serving the request carries it.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime

request_id: ContextVar[str] = ContextVar("unforgetter_request_id", default="")
_SANE = re.compile(r"^[A-Za-z0-9._:-]{8,64}$")


def request_id_for(presented: str | None) -> str:
    """The caller's id when it is 8-64 safe characters (a proxy's or a client's), else a new one."""
    if presented and _SANE.match(presented):
        return presented
    return uuid.uuid4().hex


# LOG_FORMAT=plain: for a terminal.
PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"


def console_handler(log_format: str) -> logging.Handler:
    """The console handler LOGGING configures, for a process without Django's settings."""
    handler = logging.StreamHandler()
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(PLAIN_FORMAT))
    return handler


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get() or "-"
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or request_id.get() or "-",
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)

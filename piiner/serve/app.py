"""The redaction service: a FastAPI app over a piiner detector, its requests batched onto the model.

    POST /v1/detect   {"text": "..."} or {"texts": [...]}, optional types, min_tier, thresholds
    POST /v1/redact   the same plus mode (and key for surrogate/hash); or a PDF (multipart "file")
    POST /v1/redact-file  a CSV, TSV or JSONL table (multipart "file"): the table redacted column by column, and
                      the column report (piiner/tables)
    GET  /v1/labels   the types and their tiers
    GET  /health      model, batches run, requests waiting
    GET  /            the web page; /docs the OpenAPI documentation (served from the swagger-ui-bundle package:
                      no CDN, so it works offline)

Filters and modes mean what they mean for `piiner-redact` (deid/redact.py). Bad input is a 4xx with a message:
malformed JSON or wrong types 422, unknown type names 422, too many texts 422, a body over the limit 413, a missing
or wrong API key 401 (when the service has keys). A detector error is a 500 naming the request id (also in the
X-Request-ID header); the service stays up. Responses are JSON with non-ASCII characters escaped, so any string the
JSON parser accepted, a lone surrogate too, comes back as it was sent.
"""

import asyncio
import hmac
import importlib.resources
import io
import itertools
import json
import logging
import os
import tempfile
from collections import Counter
from typing import Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, model_validator

from piiner.deid.redact import MODES, Redactor, detection_view
from piiner.hub.pii_schema import PII_TYPES, TIER_OF, TIER_RECALL_TARGETS

from .batching import MicroBatcher
from .documents import DocumentError, pdf_pages

logger = logging.getLogger("piiner.serve")


class Settings(BaseModel):
    """Limits of one service."""

    max_batch_texts: int = 32
    max_wait_ms: float = 10.0
    max_body_bytes: int = 2_000_000
    max_texts: int = 256
    max_batch_chars: int = 4000
    api_keys: frozenset[str] = frozenset()


class EscapedJSONResponse(JSONResponse):
    """JSON with every non-ASCII character escaped: a lone surrogate (valid in a JSON string, "\\ud800") cannot be
    written as UTF-8, and would make the default response a 500."""

    def render(self, content):
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


class DetectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, description="one text; or use texts")
    texts: list[str] | None = Field(None, description="several texts")
    types: list[str] | None = Field(None, description="PII types to report (default: all)")
    min_tier: int | None = Field(None, ge=1, le=4, description="report tiers 1..min_tier (1 is the most sensitive)")
    thresholds: dict[int, float] | None = Field(None, description="minimum score per tier, e.g. {\"3\": 0.6}")

    @model_validator(mode="after")
    def one_of_text_or_texts(self):
        if (self.text is None) == (self.texts is None):
            raise ValueError("give either 'text' (a string) or 'texts' (a list of strings)")
        return self


class RedactRequest(DetectRequest):
    mode: Literal[MODES] = Field("placeholder", description="placeholder, mask, surrogate or hash")
    key: str | None = Field(None, description="secret for surrogate and hash modes (consistent across calls)")


def create_app(detector, model_name="detector", settings=None):
    """The app around `detector` (texts -> entity lists per text: a piiner pipeline, or any callable alike)."""
    settings = settings or Settings()
    batcher = MicroBatcher(detector, settings.max_batch_texts, settings.max_wait_ms, settings.max_batch_chars)
    app = FastAPI(title="piiner", version="1", description=__doc__.split("\n\n")[0],
                  on_startup=[batcher.start], on_shutdown=[batcher.stop], docs_url=None, redoc_url=None,
                  default_response_class=EscapedJSONResponse)
    request_id_numbers = itertools.count(1)

    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    if settings.api_keys:
        app.add_middleware(ApiKeys, keys=settings.api_keys)
    _mount_docs(app)

    @app.middleware("http")
    async def request_ids(request: Request, call_next):
        request.state.id = f"req-{next(request_id_numbers)}"
        response = await call_next(request)
        response.headers["X-Request-ID"] = request.state.id
        return response

    async def entities_of(request, texts):
        if len(texts) > settings.max_texts:
            raise HTTPException(422, f"{len(texts)} texts in one request; at most {settings.max_texts}")
        try:
            return await batcher.submit(texts)
        except Exception as error:  # noqa: BLE001 - the model failed on this request: a 500, the service stays up
            logger.exception("detector failed on %s", request.state.id)
            raise HTTPException(500, f"the model failed on request {request.state.id}: {type(error).__name__}: "
                                     f"{error}") from None

    def redactor_over(found, body, mode="placeholder", key=None, detector=None):
        """A Redactor with the request's filters over entities already found (keyed by text), or over `detector`."""
        try:
            return Redactor(detector or (lambda texts: [found[t] for t in texts]), mode=mode, types=body.types,
                            min_tier=body.min_tier, tier_thresholds=body.thresholds, key=key)
        except (TypeError, ValueError) as error:
            raise HTTPException(422, str(error)) from None

    async def run(request, body, redacting):
        texts = [body.text] if body.text is not None else body.texts
        found = {}  # filled below: the filters are checked before the model runs
        redactor = redactor_over(found, body, getattr(body, "mode", "placeholder"), getattr(body, "key", None))
        views = [detection_view(t) for t in texts if t.strip()]
        found.update(zip(views, await entities_of(request, views)))
        results = redactor.redact(texts) if redacting else redactor.detect(texts)
        items = [_result_json(r, redacting) for r in results]
        return items[0] if body.text is not None else {"results": items}

    @app.post("/v1/detect", summary="Find PII in text")
    async def detect(request: Request, body: DetectRequest):
        return await run(request, body, redacting=False)

    @app.post("/v1/redact", summary="Replace PII in text, or in the pages of a PDF (multipart field 'file')",
              openapi_extra={"requestBody": {"content": {
                  "application/json": {"schema": {"$ref": "#/components/schemas/RedactRequest"}},
                  "multipart/form-data": {"schema": {"type": "object", "properties": {
                      "file": {"type": "string", "format": "binary"}, "mode": {"type": "string"}}}}}}})
    async def redact(request: Request):
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            return await redact_document(request)
        try:
            raw = await request.json()
        except ValueError:
            raise HTTPException(422, "the body is not valid JSON") from None
        try:
            body = RedactRequest.model_validate(raw)
        except ValueError as error:
            raise HTTPException(422, _validation_message(error)) from None
        return await run(request, body, redacting=True)

    async def uploaded(request, holding):
        """A multipart request's 'file' and its other fields; a 422 saying what the file must hold."""
        form = await request.form()
        upload = form.get("file")
        if upload is None or not hasattr(upload, "read"):
            raise HTTPException(422, f"a multipart request needs a 'file' field holding {holding}")
        return upload, {k: v for k, v in form.items() if k != "file"}

    def form_request(fields, **texts):
        """The redaction settings of a multipart request's fields (mode, types, min_tier) around `texts`."""
        try:
            return RedactRequest(**texts, mode=fields.get("mode", "placeholder"),
                                 types=fields["types"].split(",") if fields.get("types") else None,
                                 min_tier=int(fields["min_tier"]) if fields.get("min_tier") else None)
        except ValueError as error:
            raise HTTPException(422, _validation_message(error)) from None

    async def redact_document(request):
        upload, fields = await uploaded(request, "a PDF")
        try:
            pages = pdf_pages(await upload.read())
        except DocumentError as error:
            raise HTTPException(422, str(error)) from None
        body = form_request(fields, texts=[p.text for p in pages] or [""])
        results = (await run(request, body, redacting=True))["results"]
        out = []
        for page, result in zip(pages, results):
            for entity in result["entities"]:
                entity["page"] = page.number
            out.append({"page": page.number, "source": page.source, "redacted_text": result["redacted_text"],
                        "entities": result["entities"], "note": page.note})
        return {"pages": out}

    @app.post("/v1/redact-file", summary="Redact a CSV, TSV or JSONL table column by column (multipart 'file')",
              openapi_extra={"requestBody": {"content": {"multipart/form-data": {"schema": {
                  "type": "object", "required": ["file"], "properties": {
                      "file": {"type": "string", "format": "binary"}, "mode": {"type": "string"},
                      "types": {"type": "string"}, "min_tier": {"type": "integer"},
                      "column_types": {"type": "string", "description": "COL=TYPE,COL=text,..."}}}}}}})
    async def redact_file(request: Request):
        from piiner.tables import TableError, redact_table
        from piiner.tables.formats import TABLE_SUFFIXES, Table, TableReadError

        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            raise HTTPException(422, "send the table as multipart/form-data with a 'file' field")
        upload, fields = await uploaded(request, "a .csv, .tsv or .jsonl table")
        suffix = os.path.splitext(upload.filename or "")[1].lower()
        if TABLE_SUFFIXES.get(suffix) not in ("csv", "tsv", "jsonl"):
            raise HTTPException(422, f"the file must be .csv, .tsv or .jsonl, got {upload.filename!r}")
        settings_body = form_request(fields, text="")
        try:
            column_types = dict(item.split("=", 1) for item in fields.get("column_types", "").split(",") if item)
        except ValueError:
            raise HTTPException(422, "column_types takes COLUMN=TYPE pairs separated by commas") from None
        loop = asyncio.get_running_loop()

        def detect(texts):  # called from the worker thread: the texts join the service's batches
            return asyncio.run_coroutine_threadsafe(batcher.submit(texts), loop).result()

        redactor = redactor_over({}, settings_body, settings_body.mode, fields.get("key"), detector=detect)
        data = await upload.read()
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, f"table{suffix}")
            with open(path, "wb") as f:
                f.write(data)
            out = io.BytesIO()
            try:
                report, summary = await asyncio.to_thread(
                    lambda: redact_table(Table(path), redactor, out, column_types=column_types))
            except (TableError, TableReadError, ValueError) as error:
                raise HTTPException(422, str(error)) from None
        stem = os.path.splitext(os.path.basename(upload.filename))[0]
        return {"filename": f"{stem}.redacted{suffix}", "content": out.getvalue().decode("utf-8"),
                "column_report": report.to_json()["columns"],
                "summary": {"rows": summary.rows, "written": summary.written, "rejects": dict(summary.rejects),
                            "cells_redacted": sum(summary.cells_redacted.values())}}

    @app.get("/v1/labels", summary="The PII types and their tiers")
    async def labels():
        return {"types": [{"type": t, "tier": TIER_OF[t]} for t in PII_TYPES],
                "tiers": {str(tier): {"recall_target": target} for tier, target in TIER_RECALL_TARGETS.items()},
                "modes": list(MODES)}

    @app.get("/health", summary="Liveness and what the service runs")
    async def health():
        return {"status": "ok", "model": model_name, "batches": batcher.batches_run, "texts": batcher.texts_run,
                "waiting": batcher.waiting}

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page():
        return importlib.resources.files("piiner.serve").joinpath("page.html").read_text(encoding="utf-8")

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError):
        # One readable sentence, as for every other 4xx here, instead of FastAPI's list of error objects.
        return EscapedJSONResponse({"detail": _validation_message(error)}, status_code=422)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException):
        return EscapedJSONResponse({"detail": error.detail}, status_code=error.status_code, headers=error.headers)

    app.state.batcher = batcher
    return app


def _mount_docs(app):
    """/docs from the Swagger UI files of the swagger-ui-bundle package, so the page works without internet; without
    the package, /docs says how to get it."""
    try:
        import swagger_ui_bundle
    except ImportError:
        @app.get("/docs", include_in_schema=False)
        async def no_docs():
            raise HTTPException(404, "the docs page needs its extra: pip install 'piiner[serve]' (swagger-ui-bundle);"
                                     " the API description is at /openapi.json")
        return
    app.mount("/docs-assets", StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs():
        return get_swagger_ui_html(openapi_url=app.openapi_url, title="piiner API",
                                   swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-assets/swagger-ui.css",
                                   swagger_favicon_url="/docs-assets/favicon-32x32.png")


class ApiKeys:
    """ASGI middleware: with keys set, a request to /v1/ without one of them (`Authorization: Bearer KEY` or
    `X-API-Key: KEY`) is a 401; the page, the docs and /health stay open, so a load balancer can probe."""

    def __init__(self, app, keys):
        self.app, self.keys = app, [key.encode() for key in keys]

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        given = headers.get(b"x-api-key") or headers.get(b"authorization", b"").removeprefix(b"Bearer ").strip()
        if not any(hmac.compare_digest(given, key) for key in self.keys):
            response = EscapedJSONResponse({"detail": "a valid API key is needed: send it as 'Authorization: Bearer "
                                                      "KEY' or 'X-API-Key: KEY'"}, status_code=401,
                                           headers={"WWW-Authenticate": "Bearer"})
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)


class BodyLimit:
    """ASGI middleware: reading a request body over `limit` bytes is a 413, at once when its Content-Length says so,
    else (a body sent in chunks has none) as soon as the bytes read pass the limit, before the rest is read."""

    def __init__(self, app, limit):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length", b"").decode("latin-1")
        read = 0

        async def limited():
            nonlocal read
            if declared.isdigit() and int(declared) > self.limit:
                raise self.too_large(f"of {declared} bytes")
            message = await receive()
            read += len(message.get("body", b""))
            if read > self.limit:
                raise self.too_large(f"of more than {self.limit:,} bytes (sent in chunks)")
            return message

        await self.app(scope, limited, send)

    def too_large(self, size):
        return HTTPException(413, f"request body {size} is over the limit of {self.limit:,} bytes")


def _result_json(result, redacting):
    # A redaction never sends back what it found (as piiner-redact never writes it): offsets and replacements only.
    keys = ("type", "tier", "score", "start", "end") + (("new_start", "new_end", "replacement") if redacting
                                                        else ("word",))
    out = {"entities": [{k: (round(e[k], 4) if k == "score" else e[k]) for k in keys} for e in result.entities],
           "dropped": dict(Counter(result.dropped))}
    if redacting:
        out["redacted_text"] = result.redacted_text
    return out


def _validation_message(error):
    errors = getattr(error, "errors", lambda: [])()
    if not errors:
        return str(error)
    if any(e.get("type") == "json_invalid" for e in errors):
        return "the body is not valid JSON"
    return "; ".join(f"{'.'.join(str(x) for x in e.get('loc', ()) if x != 'body') or 'body'}: {e.get('msg')}"
                     for e in errors)


__all__ = ["Settings", "create_app"]

"""The redaction service: a FastAPI app over a piiner detector, its requests batched onto the model.

    POST /v1/detect   {"text": "..."} or {"texts": [...]}, optional types, min_tier, thresholds
    POST /v1/redact   the same plus mode (and key for surrogate/hash); or a PDF (multipart "file")
    GET  /v1/labels   the types and their tiers
    GET  /health      model, batches run
    GET  /            the web page; /docs the OpenAPI documentation

Filters and modes mean what they mean for `piiner-redact` (deid/redact.py). Bad input is a 4xx with a message:
malformed JSON or wrong types 422, unknown type names 422, too many texts 422, a body over the limit 413. A
detector error is a 500 naming the request id (also in the X-Request-ID header); the service stays up.
"""

import importlib.resources
import itertools
import logging
from collections import Counter
from typing import Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from piiner.deid.redact import MODES, Redactor, detection_view
from piiner.pii_schema import PII_TYPES, TIER_OF, TIER_RECALL_TARGETS

from .batching import MicroBatcher
from .documents import DocumentError, pdf_pages

logger = logging.getLogger("piiner.serve")


class Settings(BaseModel):
    """Limits of one service."""

    max_batch_texts: int = 32
    max_wait_ms: float = 10.0
    max_body_bytes: int = 2_000_000
    max_texts: int = 256


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
    batcher = MicroBatcher(detector, settings.max_batch_texts, settings.max_wait_ms)
    app = FastAPI(title="piiner", version="1", description=__doc__.split("\n\n")[0],
                  on_startup=[batcher.start], on_shutdown=[batcher.stop])
    request_id_numbers = itertools.count(1)

    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)

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

    def redactor_over(found, body, mode="placeholder", key=None):
        """A Redactor with the request's filters over entities already found (keyed by text)."""
        try:
            return Redactor(lambda texts: [found[t] for t in texts], mode=mode, types=body.types,
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

    async def redact_document(request):
        form = await request.form()
        upload = form.get("file")
        if upload is None or not hasattr(upload, "read"):
            raise HTTPException(422, "a multipart request needs a 'file' field holding a PDF")
        data = await upload.read()
        try:
            pages = pdf_pages(data)
        except DocumentError as error:
            raise HTTPException(422, str(error)) from None
        fields = {k: v for k, v in form.items() if k != "file"}
        try:
            body = RedactRequest(texts=[p.text for p in pages] or [""], mode=fields.get("mode", "placeholder"),
                                 types=fields["types"].split(",") if fields.get("types") else None,
                                 min_tier=int(fields["min_tier"]) if fields.get("min_tier") else None)
        except ValueError as error:
            raise HTTPException(422, _validation_message(error)) from None
        results = (await run(request, body, redacting=True))["results"]
        out = []
        for page, result in zip(pages, results):
            for entity in result["entities"]:
                entity["page"] = page.number
            out.append({"page": page.number, "source": page.source, "redacted_text": result["redacted_text"],
                        "entities": result["entities"], "note": page.note})
        return {"pages": out}

    @app.get("/v1/labels", summary="The PII types and their tiers")
    async def labels():
        return {"types": [{"type": t, "tier": TIER_OF[t]} for t in PII_TYPES],
                "tiers": {str(tier): {"recall_target": target} for tier, target in TIER_RECALL_TARGETS.items()},
                "modes": list(MODES)}

    @app.get("/health", summary="Liveness and what the service runs")
    async def health():
        return {"status": "ok", "model": model_name, "batches": batcher.batches_run, "texts": batcher.texts_run}

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page():
        return importlib.resources.files("piiner.serve").joinpath("page.html").read_text(encoding="utf-8")

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError):
        # One readable sentence, as for every other 4xx here, instead of FastAPI's list of error objects.
        return JSONResponse({"detail": _validation_message(error)}, status_code=422)

    app.state.batcher = batcher
    return app


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

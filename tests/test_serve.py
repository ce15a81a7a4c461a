"""The redaction service: the API and its errors, concurrent requests batched onto the detector with the same
answers as one at a time, PDFs, and the page. The regex detector (or a fake) stands in for the model."""

import asyncio
import json
import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from piiner.baselines.regex import RegexDetector
from piiner.serve.app import Settings, create_app

TEXT = "Mail a@b.com or call 555-201-3344, SSN 123-45-6789."


@pytest.fixture
def client():
    with TestClient(create_app(RegexDetector(), "regex")) as c:
        yield c


def test_detect_and_redact_one_text_or_many(client):
    found = client.post("/v1/detect", json={"text": TEXT}).json()
    assert [(e["type"], e["word"]) for e in found["entities"]] == [
        ("EMAIL", "a@b.com"), ("PHONE", "555-201-3344"), ("SSN", "123-45-6789")]
    redacted = client.post("/v1/redact", json={"text": TEXT}).json()
    assert redacted["redacted_text"] == "Mail [EMAIL] or call [PHONE], SSN [SSN]."
    assert "word" not in redacted["entities"][0] and "a@b.com" not in json.dumps(redacted)
    many = client.post("/v1/redact", json={"texts": [TEXT, "nothing", ""], "mode": "mask", "min_tier": 1}).json()
    assert [r["redacted_text"] for r in many["results"]] == [
        "Mail a@b.com or call 555-201-3344, SSN ***********.", "nothing", ""]
    assert many["results"][0]["dropped"] == {"tier_not_selected": 2}
    only = client.post("/v1/detect", json={"text": TEXT, "types": ["EMAIL"], "thresholds": {"2": 0.5}}).json()
    assert [e["type"] for e in only["entities"]] == ["EMAIL"]


def test_labels_health_docs_and_the_page(client):
    labels = client.get("/v1/labels").json()
    assert len(labels["types"]) == 41 and {"type": "SSN", "tier": 1} in labels["types"]
    assert client.get("/health").json()["status"] == "ok"
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/detect", "/v1/redact", "/v1/labels", "/health"} <= set(paths)
    page = client.get("/")
    assert page.status_code == 200 and 'id="input"' in page.text and 'id="redacted"' in page.text


@pytest.mark.parametrize("body, status, message", [
    ('{"text": ', 422, "not valid JSON"),
    ('{"text": 5}', 422, "text"),
    ('{"text": "a", "texts": ["b"]}', 422, "either 'text'"),
    ('{"text": "a", "types": ["WIZARD"]}', 422, "unknown PII type"),
    ('{"text": "a", "mode": "shred"}', 422, "mode"),
    ('{"text": "a", "min_tier": 9}', 422, "min_tier"),
    ('{"text": "a", "thresholds": {"2": 7}}', 422, "score in [0, 1]"),
    ('{"text": "a", "thresholds": {"5": 0.1}}', 422, "from 1 (most sensitive) to 4"),
    ('{"text": "a", "thresholds": {"1": -1}}', 422, "score in [0, 1]"),
    ('{"text": "a", "thresholds": {"1": NaN}}', 422, "score in [0, 1]"),
    ('{"text": "a", "colour": "red"}', 422, "colour"),
])
def test_bad_input_is_a_4xx_with_a_message(client, body, status, message):
    for endpoint in ("/v1/redact", "/v1/detect"):
        if endpoint == "/v1/detect" and "mode" in body:
            continue  # detection takes no mode: an unknown field there is the "colour" case
        response = client.post(endpoint, content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == status and message in response.json()["detail"], (endpoint, response.text)


def test_limits_on_body_size_and_text_count():
    app = create_app(RegexDetector(), "regex", Settings(max_body_bytes=1000, max_texts=3))
    with TestClient(app) as client:
        big = client.post("/v1/detect", json={"text": "x" * 5000})
        assert big.status_code == 413 and "over the limit" in big.json()["detail"]
        many = client.post("/v1/detect", json={"texts": ["a"] * 4})
        assert many.status_code == 422 and "at most 3" in many.json()["detail"]


def test_a_body_sent_in_chunks_is_held_to_the_same_limit():
    """A chunked body has no Content-Length: it was read whole, however large."""
    app = create_app(RegexDetector(), "regex", Settings(max_body_bytes=1000))
    body = json.dumps({"text": "mail a@b.org " + "x" * 5000}).encode()
    with TestClient(app) as client:
        for endpoint in ("/v1/detect", "/v1/redact"):
            chunks = (body[i:i + 100] for i in range(0, len(body), 100))  # no length known: sent chunked
            response = client.post(endpoint, content=chunks, headers={"Content-Type": "application/json"})
            assert response.status_code == 413 and "over the limit of 1,000 bytes" in response.json()["detail"]
            assert response.headers["X-Request-ID"]
        small = json.dumps({"text": "mail a@b.org"}).encode()
        response = client.post("/v1/detect", content=iter([small[:5], small[5:]]),
                               headers={"Content-Type": "application/json"})
        assert response.status_code == 200 and response.json()["entities"][0]["word"] == "a@b.org"


def test_a_model_error_is_a_500_naming_the_request_and_the_service_stays_up():
    def fragile(texts):
        if any("boom" in t for t in texts):
            raise RuntimeError("tokenizer exploded")
        return RegexDetector()(texts)

    with TestClient(create_app(fragile, "fragile")) as client:
        failed = client.post("/v1/detect", json={"text": "boom"})
        assert failed.status_code == 500
        assert failed.headers["X-Request-ID"] in failed.json()["detail"] and "tokenizer exploded" in failed.json()["detail"]
        assert client.post("/v1/detect", json={"text": "a@b.com"}).json()["entities"][0]["type"] == "EMAIL"


def test_concurrent_requests_share_batches_and_get_the_answers_of_one_at_a_time():
    calls, lock = [], threading.Lock()

    def slow_regex(texts):
        with lock:
            calls.append(len(texts))
        time.sleep(0.05)  # a model call: while it runs, more requests arrive and wait for the next batch
        return RegexDetector()(texts)

    texts = [f"user{i}@x.org called 555-201-{3000 + i}" for i in range(24)]
    app = create_app(slow_regex, "slow", Settings(max_batch_texts=8, max_wait_ms=20))

    async def scenario():
        await app.state.batcher.start()
        try:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                alone = [(await client.post("/v1/redact", json={"text": t})).json() for t in texts]
                calls.clear()
                together = await asyncio.gather(*(client.post("/v1/redact", json={"text": t}) for t in texts))
        finally:
            await app.state.batcher.stop()
        return alone, [r.json() for r in together]

    alone, together = asyncio.run(scenario())
    assert together == alone
    assert max(calls) > 1 and sum(calls) == len(texts) and max(calls) <= 8  # batched, within the limit


def minimal_pdf(lines):
    """A one-page PDF whose text layer holds `lines` (written by hand: no PDF writer is a dependency)."""
    stream = "BT /F1 12 Tf 72 720 Td " + " ".join(f"({line}) Tj 0 -16 Td" for line in lines) + " ET"
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               "/Resources << /Font << /F1 5 0 R >> >> >>",
               f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream",
               "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = "%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n" + "".join(f"{o:010d} 00000 n \n" for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return out.encode("latin-1")


def test_a_pdf_comes_back_redacted_page_by_page(client):
    pdf = minimal_pdf(["Contact: a@b.com", "SSN 123-45-6789"])
    response = client.post("/v1/redact", files={"file": ("doc.pdf", pdf, "application/pdf")}, data={"mode": "mask"})
    assert response.status_code == 200, response.text
    page = response.json()["pages"][0]
    assert page["page"] == 1 and page["source"] == "text layer"
    assert "a@b.com" not in page["redacted_text"] and "*******" in page["redacted_text"]
    assert {e["type"] for e in page["entities"]} == {"EMAIL", "SSN"} and all(e["page"] == 1 for e in page["entities"])
    not_pdf = client.post("/v1/redact", files={"file": ("x.pdf", b"hello", "application/pdf")})
    assert not_pdf.status_code == 422 and "not a PDF" in not_pdf.json()["detail"]


def test_the_batcher_keeps_counts_not_a_record_of_every_batch():
    """It appended every batch's size to a list for /health: a service up for months grew by a word per batch."""
    import tracemalloc

    from piiner.serve.batching import MicroBatcher

    async def scenario():
        batcher = MicroBatcher(lambda texts: [[] for _ in texts], max_texts=4, max_wait_ms=0)
        await batcher.start()
        try:
            for _ in range(200):  # warm: the executor's threads and the loop's own structures exist
                await batcher.submit(["x"])
            tracemalloc.start()
            for _ in range(5000):  # the allocator's and the loop's one-off growth happens here, however busy the host
                await batcher.submit(["x"])
            before = tracemalloc.take_snapshot()
            for _ in range(5000):
                await batcher.submit(["x"])
            grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
            tracemalloc.stop()
        finally:
            await batcher.stop()
        return batcher, grown

    batcher, grown = asyncio.run(scenario())
    assert (batcher.batches_run, batcher.texts_run) == (10200, 10200)
    assert grown < 20_000, f"{grown} bytes more after 5,000 batches"  # a list of sizes: about 40,000


@pytest.mark.parametrize("endpoint", ["detect", "redact"])
def test_a_lone_surrogate_comes_back_as_it_was_sent_never_a_500(client, endpoint):
    body = b'{"text": "\\ud800 John Smith a@b\\udfff.com and a@b.com"}'
    response = client.post(f"/v1/{endpoint}", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    result = response.json()
    if endpoint == "redact":
        assert result["redacted_text"] == "\ud800 John Smith a@b\udfff.com and [EMAIL]"
    else:
        assert [e["word"] for e in result["entities"]] == ["a@b.com"]


def test_the_docs_page_loads_its_files_from_the_service_not_a_cdn(client):
    page = client.get("/docs")
    assert page.status_code == 200
    urls = [part for part in page.text.split("'") + page.text.split('"') if "://" in part]
    assert urls == [], f"the docs page loads {urls}: blank without internet"
    for asset in ("/docs-assets/swagger-ui-bundle.js", "/docs-assets/swagger-ui.css"):
        assert client.get(asset).status_code == 200


def test_api_keys_guard_the_api_and_leave_health_and_the_page_open():
    with TestClient(create_app(RegexDetector(), "regex", Settings(api_keys=frozenset({"k-1", "k-2"})))) as c:
        assert c.post("/v1/detect", json={"text": TEXT}).status_code == 401
        assert c.post("/v1/detect", json={"text": TEXT}, headers={"X-API-Key": "wrong"}).status_code == 401
        assert c.post("/v1/detect", json={"text": TEXT}, headers={"X-API-Key": "k-1"}).status_code == 200
        assert c.post("/v1/redact", json={"text": TEXT}, headers={"Authorization": "Bearer k-2"}).status_code == 200
        assert c.get("/health").status_code == 200 and c.get("/").status_code == 200


def test_the_api_key_option_reads_the_environment_and_refuses_an_empty_variable(monkeypatch):
    from piiner.serve.cli import api_keys

    monkeypatch.setenv("PIINER_KEYS", "a, b")
    assert api_keys("PIINER_KEYS") == {"a", "b"}
    monkeypatch.setenv("PIINER_KEYS", "")
    with pytest.raises(ValueError, match="PIINER_KEYS: that environment variable is unset or empty"):
        api_keys("PIINER_KEYS")


def test_a_text_cut_at_paragraphs_gives_the_entities_of_the_whole_text():
    from piiner.serve.batching import pieces

    text = "\n\n".join(f"para {i}: mail u{i}@x.org or call 555-201-{3000 + i}.\nSSN 123-45-6789" for i in range(50))
    cut = pieces(text, 200)
    assert "".join(p for _, p, _, _ in cut) == text and all(text[o:o + len(p)] == p for o, p, _, _ in cut)
    assert len(cut) > 10 and all((lo, hi) == (o, o + len(p)) for o, p, lo, hi in cut)
    shifted = [{**e, "start": e["start"] + o, "end": e["end"] + o} for o, p, _, _ in cut
               for e in RegexDetector()([p])[0]]
    whole = RegexDetector()([text])[0]
    assert [(e["start"], e["end"], e["type"]) for e in shifted] == [(e["start"], e["end"], e["type"]) for e in whole]


def test_a_long_paragraph_is_cut_into_overlapping_pieces_that_lose_and_double_nothing():
    """One paragraph of 20,000 characters was one piece: a small request waited for all of it. Entities slid
    through every word position of the filler come back once each, whole, wherever the cuts fall."""
    from piiner.serve.batching import joined, pieces

    words = ("the quick brown fox jumps over a lazy dog and then " * 400).split()
    for position in range(0, 300, 7):
        text = " ".join(words[:position] + ["mail u1@x.org or call 555-201-3344"] + words[position:]
                        + ["and", "u2@example.com"] + words[:position])
        for max_chars in (480, 800, 4000):  # stretches of 120, 200 and 1,000 characters
            cut = pieces(text, max_chars)
            assert all(len(p) <= max_chars // 4 for _, p, _, _ in cut) and len(cut) > 1
            assert all(text[o:o + len(p)] == p for o, p, _, _ in cut)
            assert [lo for _, _, lo, _ in cut][1:] == [hi for _, _, _, hi in cut][:-1]  # kept ranges tile the text
            got = joined(cut, [RegexDetector()([p])[0] for _, p, _, _ in cut])
            want = RegexDetector()([text])[0]
            assert [(e["start"], e["end"], e["type"]) for e in got] == [(e["start"], e["end"], e["type"])
                                                                        for e in want], (position, max_chars)


def small_beside_large(large):
    """A request of `large` sent first to a service whose detector takes time in proportion to the characters it
    reads (2 MB/s), then a short one: `(large's response, short's response, /health's waiting count in between,
    whether the short one was answered first)`."""
    def timed(texts):
        time.sleep(sum(map(len, texts)) / 2_000_000)
        return RegexDetector()(texts)

    app = create_app(timed, "timed", Settings(max_batch_chars=2000, max_wait_ms=0, max_body_bytes=4_000_000))
    done = {}

    async def scenario():
        await app.state.batcher.start()
        try:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                async def send(name, text):
                    response = await client.post("/v1/detect", json={"text": text})
                    done[name] = time.monotonic()
                    return response

                big = asyncio.create_task(send("large", large))
                await asyncio.sleep(0.02)
                waiting = (await client.get("/health")).json()["waiting"]
                small = await send("small", "call 555-201-3344")
                return (await big).json(), small.json(), waiting
        finally:
            await app.state.batcher.stop()

    big, small, waiting = asyncio.run(scenario())
    return big, small, waiting, done["small"] < done["large"]


def test_a_large_request_does_not_stall_a_small_one_sent_after_it():
    """A 400 kB request of paragraphs, then a short one: the short one is answered after at most a batch or two of
    the large one, not after all of it, and /health counts the waiting requests."""
    large = "\n\n".join(f"Paragraph {i} of the export: mail u{i}@x.org today. " + "filler " * 60 for i in range(1000))
    big, small, waiting, small_first = small_beside_large(large)
    assert waiting == 1 and small_first
    assert len(big["entities"]) == 1000 and small["entities"][0]["type"] == "PHONE"


def test_a_small_request_is_not_stalled_by_one_long_paragraph():
    large = " ".join(f"row {i} mail u{i}@x.org today" + " filler" * 60 for i in range(1000))  # one paragraph
    big, small, _, small_first = small_beside_large(large)
    assert small_first
    assert [e["word"] for e in big["entities"]] == [f"u{i}@x.org" for i in range(1000)]
    assert small["entities"][0]["type"] == "PHONE"


def test_a_large_request_goes_to_the_model_in_pieces_of_a_quarter_batch():
    """What a small request waits for is the batch running when it arrives, and a piece of the large one beside it
    in its own batch. One paragraph of 1 MB held small requests at 4.4 times their latency alone: each batch beside
    it was a batch's worth of one stretch, read in two long windows. A large request, one paragraph or many, goes
    in pieces of a quarter of a batch; a paragraph longer than that but within a batch stays whole."""
    from piiner.serve.batching import MicroBatcher, pieces

    batches = []

    def detect(texts):
        batches.append([len(text) for text in texts])
        return RegexDetector()(texts)

    one_paragraph = " ".join(f"row {i} mail u{i}@x.org" + " filler" * 20 for i in range(200))
    paragraphs = "\n\n".join(f"para {i}: mail u{i}@x.org" + " filler" * 20 for i in range(200))

    async def scenario():
        batcher = MicroBatcher(detect, max_texts=32, max_wait_ms=0, max_chars=2000)
        await batcher.start()
        try:
            return await asyncio.gather(batcher.submit([one_paragraph]), batcher.submit([paragraphs]))
        finally:
            await batcher.stop()

    (one,), (many,) = asyncio.run(scenario())
    assert len(one) == len(many) == 200
    assert max(size for batch in batches for size in batch) <= 500 and max(map(sum, batches)) <= 2000
    long_paragraph = "x " * 700  # 1,400 characters: over a quarter, within a batch
    cut = pieces("a\n\n" + long_paragraph + "\n\nb", 2000)
    assert len(cut) == 3 and long_paragraph.strip() in cut[1][1]


def test_after_a_shared_batch_one_request_fills_half_a_batch():
    """A small request that arrives while a large one runs waits for the batch in flight, and clients answered in
    a shared batch tend to send again while the next one runs. That next batch, of the large request alone, was a
    whole batch; it is half one, and a large request alone since the batch before fills a batch again."""
    from piiner.serve.batching import MicroBatcher

    batches = []

    def detect(texts):
        batches.append([len(text) for text in texts])
        return [[] for _ in texts]

    large = "\n\n".join(f"para {i} " + "filler " * 60 for i in range(40))  # 40 pieces of ~430 characters

    async def scenario():
        batcher = MicroBatcher(detect, max_texts=32, max_wait_ms=0, max_chars=2000)
        await batcher.start()
        try:
            await asyncio.gather(batcher.submit([large]), batcher.submit(["call 555-201-3344"]))
        finally:
            await batcher.stop()

    asyncio.run(scenario())
    sizes = [sum(batch) for batch in batches]
    assert 17 in batches[0]  # the small request shared the first batch
    assert sizes[1] <= 1000 < sizes[2] <= 2000
    assert sum(sizes) >= len(large) + 10


def test_a_table_upload_comes_back_redacted_column_by_column_with_its_report(client):
    table = "id,ssn,notes\n7,219-09-9999,mail a@b.com\n8,078-05-1120,nothing here\n"
    response = client.post("/v1/redact-file", files={"file": ("people.csv", table, "text/csv")},
                           data={"mode": "placeholder", "column_types": "id=none"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["filename"] == "people.redacted.csv"
    assert body["content"] == "id,ssn,notes\n7,[SSN],mail [EMAIL]\n8,[SSN],nothing here\n"
    assert {c["column"]: c["decision"] for c in body["column_report"]} == {"id": "none", "ssn": "type",
                                                                          "notes": "text"}
    assert body["summary"] == {"rows": 2, "written": 2, "rejects": {}, "cells_redacted": 3}
    refused = client.post("/v1/redact-file", files={"file": ("people.xlsx", b"PK", "application/octet-stream")})
    assert refused.status_code == 422 and ".csv, .tsv or .jsonl" in refused.json()["detail"]
    ragged = client.post("/v1/redact-file", files={"file": ("t.csv", "a,b\n1\n", "text/csv")})
    assert ragged.json()["summary"]["rejects"] == {"ragged row": 1}
    records = '{"id": 1, "contact": {"ssn": "219-09-9999"}}\n'
    jsonl = client.post("/v1/redact-file", files={"file": ("t.jsonl", records, "application/jsonl")}).json()
    assert jsonl["filename"] == "t.redacted.jsonl" and jsonl["content"] == '{"id": 1, "contact": {"ssn": "[SSN]"}}\n'

"""PDF documents for the service: the text of each page, from its text layer (pypdf) or, for a scanned page, from
Tesseract OCR when `pdftoppm` and `tesseract` are installed (Debian: poppler-utils, tesseract-ocr)."""

import dataclasses
import io
import os
import shutil
import subprocess
import tempfile


class DocumentError(ValueError):
    """A document that cannot be read; the message says why."""


@dataclasses.dataclass
class Page:
    number: int  # from 1
    text: str
    source: str  # "text layer", "ocr" or "none"
    note: str | None = None


def ocr_available():
    return shutil.which("pdftoppm") is not None and shutil.which("tesseract") is not None


def pdf_pages(data):
    """Pages of a PDF given as bytes, each with its text and where the text came from."""
    if not data.startswith(b"%PDF"):
        raise DocumentError("the file is not a PDF (it does not start with %PDF)")
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError as error:
        raise DocumentError("reading PDFs needs pypdf: pip install 'piiner[serve]'") from error
    try:
        reader = PdfReader(io.BytesIO(data))
        texts = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError) as error:
        raise DocumentError(f"the PDF cannot be read: {error}") from None
    pages = []
    for number, text in enumerate(texts, start=1):
        if text.strip():
            pages.append(Page(number, text, "text layer"))
        elif ocr_available():
            pages.append(Page(number, _ocr(data, number), "ocr"))
        else:
            pages.append(Page(number, "", "none", "this page has no text layer (a scan?); install tesseract-ocr "
                                                   "and poppler-utils to read it with OCR"))
    return pages


def _ocr(data, number):
    with tempfile.TemporaryDirectory() as folder:
        pdf = f"{folder}/doc.pdf"
        with open(pdf, "wb") as f:
            f.write(data)
        subprocess.run(["pdftoppm", "-r", "300", "-f", str(number), "-l", str(number), "-png", pdf, f"{folder}/p"],
                       check=True, capture_output=True, timeout=120)
        image = next(p for p in sorted(os.listdir(folder)) if p.endswith(".png"))
        result = subprocess.run(["tesseract", f"{folder}/{image}", "-", "-l", "eng"], check=True, capture_output=True,
                                timeout=300)
    return result.stdout.decode("utf-8", errors="replace")

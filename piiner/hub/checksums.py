"""Check digits of the identifiers piiner generates, replaces and detects: Luhn (payment cards, IMEIs) and the
ISO 13616 mod-97 of IBANs, and the digits they are read from (`fold_width`: full-width forms as ASCII). One
implementation for data_prep (synthetic values), deid (surrogates), evaluation (the regex baseline), encoding and
decoding (a card must pass Luhn), so it ships with the weights: standard library only."""

import re

_DIGITS = frozenset("0123456789")

# Full-width forms (U+FF01-FF5E: "０２０", "ＳＳＮ：") and the ideographic space, which East Asian input methods and some
# forms write, as the ASCII they stand for. The encoder's vocabulary has none of them: a number written so was [UNK]
# tokens and hashed char ids, and went unfound.
_FULL_WIDTH = {0xFF01 + i: 0x21 + i for i in range(94)} | {0x3000: 0x20}
_ANY_FULL_WIDTH = re.compile("[\uff01-\uff5e\u3000]")  # most texts hold none; a search costs far less


def fold_width(text, start=0, end=None):
    """`text` with the full-width forms of `text[start:end]` (all of it by default) as their ASCII characters, one
    code point for one, so that an offset into the result is an offset into `text`. The encoder, the char CNN, the
    decoder's checks, the regex detector and the surrogates all read text so."""
    end = len(text) if end is None else end
    if not _ANY_FULL_WIDTH.search(text, start, end):
        return text
    return text[:start] + text[start:end].translate(_FULL_WIDTH) + text[end:]


def luhn_check_digit(payload: str) -> str:
    """The digit that makes ``payload + digit`` pass the Luhn check (payload: ASCII digits only)."""
    total = 0
    for i, ch in enumerate(reversed(payload)):
        d = int(ch)
        if i % 2 == 0:  # these digits sit at odd distance from the check digit that will be appended: doubled
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return str((10 - total % 10) % 10)


def luhn_valid(number: str) -> bool:
    """Luhn check of the ASCII digits in ``number`` (separators ignored); fewer than two digits is invalid."""
    digits = [c for c in number if c in _DIGITS]
    return len(digits) > 1 and luhn_check_digit("".join(digits[:-1])) == digits[-1]


def _iban_numeric(text: str) -> int:
    return int("".join(str(int(c, 36)) for c in text))


def iban_check_digits(country: str, bban: str) -> str:
    """The two check digits of the IBAN ``country + ?? + bban``."""
    return f"{98 - _iban_numeric(bban + country + '00') % 97:02d}"


def iban_valid(iban: str) -> bool:
    """ISO 13616 mod-97 check; spaces and hyphens allowed, 15 to 34 characters once they are removed."""
    compact = re.sub(r"[\s-]", "", iban).upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}", compact):
        return False
    return _iban_numeric(compact[4:] + compact[:4]) % 97 == 1

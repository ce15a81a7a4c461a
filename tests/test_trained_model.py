"""What a user relies on from a trained model, checked on a real snapshot (slow: `make test-slow`, after
`make quickstart` or with PIINER_TEST_MODEL=<snapshot folder>)."""

import os

import pytest

from conftest import REPO_ROOT

MODEL = os.environ.get("PIINER_TEST_MODEL") or os.path.join(REPO_ROOT, "runs", "quickstart")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.isfile(os.path.join(MODEL, "model.safetensors")),
                       reason=f"no trained snapshot at {MODEL}: run make quickstart or set PIINER_TEST_MODEL"),
]

BENIGN = [
    "The meeting has been moved to the large conference room on the third floor.",
    "The weather today is sunny with a light breeze from the west.",
    "We went to the store and bought some apples and bread.",
    "Please remember to submit your timesheet before Friday afternoon.",
]


@pytest.fixture(scope="module")
def tagger():
    from piiner.snapshot import load_pipeline

    return load_pipeline(MODEL)


@pytest.mark.parametrize("sentence", BENIGN)
def test_a_benign_sentence_repeated_stays_benign(tagger, sentence):
    """Repeated text (logs, boilerplate) used to read as organizations and places: 12 false positives in 20 copies
    of one sentence. A model trained on repeated frames finds at most one thing in 20 copies."""
    alone = tagger(sentence)
    repeated = tagger(" ".join([sentence] * 20))
    assert len(repeated) <= max(1, 20 * len(alone)), [(e["type"], e["word"]) for e in repeated][:10]


def test_a_password_on_the_line_after_its_label_is_found(tagger):
    text = "Username: jsmith\nPassword:\nTr0ub4dor&3\nPlease change it after your first login."
    found = {e["word"] for e in tagger(text)}
    assert "Tr0ub4dor&3" in found


@pytest.mark.parametrize("text, wanted", [
    ("Her card 4111 1111 1111 1111 was charged twice; SSN on file 123-45-6789.",
     {("CREDIT_CARD", "4111 1111 1111 1111"), ("SSN", "123-45-6789")}),
    ("Refund went to card 5500 0000 0000 0004, and the SSN we have is 078-05-1120.",
     {("CREDIT_CARD", "5500 0000 0000 0004"), ("SSN", "078-05-1120")}),
])
def test_two_identifiers_in_one_sentence_are_both_found(tagger, text, wanted):
    """A sentence holding a card and an SSN lost the SSN (found alone): the words between them ("charged") pulled
    it toward other types."""
    found = {(e["type"], e["word"]) for e in tagger(text)}
    assert wanted <= found, found


def test_identifiers_written_full_width_are_found_as_in_ascii(tagger):
    """East Asian input methods write digits full width ("０２０"); they were [UNK] tokens, and nothing was found."""
    ascii_text = "Her card 4111 1111 1111 1111 was charged twice; SSN on file 123-45-6789."
    full_width = ascii_text.translate({ord(c): ord(c) + 0xFEE0 for c in "0123456789"})
    found = [(e["type"], e["start"], e["end"]) for e in tagger(full_width)]
    assert found == [(e["type"], e["start"], e["end"]) for e in tagger(ascii_text)]
    assert {"CREDIT_CARD", "SSN"} <= {t for t, _, _ in found}

"""Whether an entity in a long text is found whole wherever it falls: the three long texts of issue 88, rebuilt.

    python benchmarks/probe_long_texts.py runs/quickstart [MODEL ...]

A 200,000-character document of prose paragraphs with an e-mail address every few sentences; one line of about
1.3 million characters holding 20,000 e-mail addresses among words; a ticket list of 480 lines ("Ticket 7: John Smith
called from 212-555-1007 about order 27101;"). For each planted e-mail or phone number the table counts whether an
entity of its type covers exactly it (whole), covers part of it or runs past it (cut), or nothing of its type
touches it (missed, left in clear).
"""

import bisect
import sys
import time

from piiner.snapshot import load_pipeline

FILLER = ("We reviewed the quarterly figures in the morning and agreed to move the planning session to Thursday. "
          "The team raised questions about the budget, the hiring plan and the schedule for the new office. ")
WORDS = FILLER.split()
NAMES = ["John Smith", "Maria Lopez", "Wei Chen", "Amara Okafor", "Lars Berg", "Priya Nair"]


def document_of_paragraphs():
    """~200,000 characters: paragraphs of three filler sentences, each ending with an e-mail address to contact."""
    parts, i = [], 0
    text_length = 0
    while text_length < 200_000:
        paragraph = []
        for _ in range(3):
            email = f"user{i}@example.com"
            sentence = " ".join(WORDS[i % 7:]) + f" Contact {email} today."
            paragraph.append(sentence)
            i += 1
        parts.append(" ".join(paragraph))
        text_length += len(parts[-1]) + 2
    text = "\n\n".join(parts)
    return text, _locate(text, [f"user{k}@example.com" for k in range(i)], "EMAIL")


def one_long_line():
    """One line of ~1.3 million characters with 20,000 e-mail addresses among words, no paragraph break."""
    pieces = []
    for i in range(20_000):
        pieces.append(" ".join(WORDS[i % 11: i % 11 + 5 + i % 5]) + f" mail{i}.x@corp-mail.org")
    text = " ".join(pieces)
    return text, _locate(text, [f"mail{i}.x@corp-mail.org" for i in range(20_000)], "EMAIL")


def ticket_list():
    lines = [f"Ticket {i}: {NAMES[i % len(NAMES)]} called from 212-555-{1000 + i} about order {27094 + i};"
             for i in range(480)]
    text = "\n".join(lines)
    return text, _locate(text, [f"212-555-{1000 + i}" for i in range(480)], "PHONE")


def _locate(text, values, kind):
    """(start, end, type) of each planted value, in text order (each occurs once)."""
    out, position = [], 0
    for value in values:
        start = text.index(value, position)
        out.append((start, start + len(value), kind))
        position = start + len(value)
    return out


def count(planted, entities):
    """(whole, cut, missed) over the planted values. Entities come in text order without overlaps, so those that
    can touch a value are found by bisecting their ends, not by reading all 20,000 per value."""
    whole = cut = missed = 0
    ends = [e["end"] for e in entities]
    for start, end, kind in planted:
        overlapping, i = [], bisect.bisect_right(ends, start)
        while i < len(entities) and entities[i]["start"] < end:
            if entities[i]["type"] == kind:
                overlapping.append(entities[i])
            i += 1
        if any(e["start"] == start and e["end"] == end for e in overlapping):
            whole += 1
        elif overlapping:
            cut += 1
        else:
            missed += 1
    return whole, cut, missed


def main(models):
    texts = {"200,000 characters in paragraphs, e-mails": document_of_paragraphs(),
             "one line of ~1.3M characters, e-mails": one_long_line(),
             "ticket list of 480 lines, phones": ticket_list()}
    print("| model | text | characters | planted | whole | cut | missed | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for model in models:
        pipe = load_pipeline(model, batch_size=16)
        for name, (text, planted) in texts.items():
            started = time.perf_counter()
            entities = pipe(text)
            seconds = time.perf_counter() - started
            whole, cut, missed = count(planted, entities)
            print(f"| {model} | {name} | {len(text):,} | {len(planted):,} | {whole:,} | {cut} | {missed} | "
                  f"{seconds:.1f} |", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    main(sys.argv[1:])

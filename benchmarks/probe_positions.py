"""Where an entity stands in a text of prose, and whether it is found whole and typed: four entities slid through
about 100 word positions of 1,800 characters, per model given (python benchmarks/probe_positions.py MODEL ...)."""
import sys

from piiner.snapshot import load_pipeline
FILLER = ("We reviewed the quarterly figures in the morning and agreed to move the planning session to Thursday. "
          "The team raised questions about the budget, the hiring plan and the schedule for the new office. "
          "Several people asked for the slides to be shared before the next review so that everyone can prepare. ") * 6
words = FILLER.split()
cases = [("contact user2@example.com today", "user2@example.com", "EMAIL"),
         ("called from 212-555-9916 about", "212-555-9916", "PHONE"),
         ("Quote 612-40-8813 when you call back", "612-40-8813", "SSN"),
         ("met John Smith there", "John Smith", "PERSON")]
probes = ["Quote 612-40-8813 when you call back", "Dear 233-71-0458, your update", "Schedule for 407-26-1195:",
          "matched it to 355.18.2270", "Ticket 1: John Smith called from 212-555-9916 about order 27094;"]
for model in sys.argv[1:]:
    pipe = load_pipeline(model, batch_size=16)
    print("==", model)
    for p in probes:
        print("  ", p, "->", [(e["word"], e["type"]) for e in pipe(p)])
    for snippet, value, kind in cases:
        texts = [" ".join(words[:i] + [snippet] + words[i:]) for i in range(0, len(words) + 1, max(1, len(words) // 100))]
        found = sum(any(e["word"] == value and e["type"] == kind for e in ents) for ents in pipe(texts))
        alone = any(e["word"] == value and e["type"] == kind for e in pipe(snippet))
        print(f"   {kind:7s} alone {alone}; whole and typed at {found}/{len(texts)} positions in {len(FILLER)} chars")

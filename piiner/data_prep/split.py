"""Train/validation/test assignment by group (template or source document), never by record.

A real corpus keeps its own held-out split as our test split. When it has no validation split, a stable
fraction of its training groups becomes validation; when it has only a training split, groups are hashed into
all three. The hash of the group name decides, so the same group lands in the same split on every build and
for every seed. Synthetic records arrive with their split already set by their templates.
"""

import hashlib

SPLITS = ("train", "validation", "test")


def normalize_split_name(name):
    name = str(name or "train").lower()
    if "test" in name:
        return "test"
    if name.startswith("val") or "dev" in name:
        return "validation"
    return "train"


def group_fraction(group):
    """A stable number in [0, 1) for a group name."""
    digest = hashlib.blake2b(str(group).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def assign_splits(records, validation_fraction=0.1, test_fraction=0.1):
    """Set ``split`` on the raw records of ONE source (a list, each with ``source_split`` and ``group``)."""
    present = {normalize_split_name(r.get("source_split")) for r in records}
    for record in records:
        own = normalize_split_name(record.get("source_split"))
        fraction = group_fraction(record["group"])
        if own == "test" or (own == "validation" and "test" not in present):
            record["split"] = "test"
        elif own == "validation":
            record["split"] = "validation"
        elif "validation" in present and "test" in present:
            record["split"] = "train"
        elif "test" in present or "validation" in present:
            record["split"] = "validation" if fraction < validation_fraction else "train"
        elif fraction < test_fraction:
            record["split"] = "test"
        elif fraction < test_fraction + validation_fraction:
            record["split"] = "validation"
        else:
            record["split"] = "train"
    return records

"""The frozen piiner label schema: 41 PII types in 4 sensitivity tiers, 83 BIO labels.

Ships with the weights (imported by ``configuration_piiner``) and is the one place the rest of the repo takes
label meaning from. The order of ``PII_TYPES`` fixes the label ids of every checkpoint: append new types at
the end, never reorder, or old checkpoints decode the wrong types.
"""

# Tier = sensitivity. The recall a user of each tier expects: 1 -> 0.98, 2 -> 0.95, 3 -> 0.90, 4 -> 0.85.
TIER_TYPES = {
    1: ("SSN", "CREDIT_CARD", "BANK_ACCOUNT", "PASSPORT_NUMBER", "DRIVERS_LICENSE", "TAX_ID"),
    2: ("PERSON", "EMAIL", "PHONE", "DATE_OF_BIRTH", "STREET_ADDRESS", "IP_ADDRESS"),
    3: (
        "USERNAME", "DATE", "LOCATION", "ORGANIZATION", "URL", "LICENSE_PLATE", "AGE", "NATIONALITY", "GENDER",
        "RELIGION", "MARITAL_STATUS",
    ),
    4: (
        "MEDICAL_RECORD", "EMPLOYEE_ID", "STUDENT_ID", "ACCOUNT_NUMBER", "PIN", "PASSWORD", "BIOMETRIC",
        "VEHICLE_ID", "DEVICE_ID", "CRYPTO_WALLET", "IBAN", "SWIFT_CODE", "INSURANCE_NUMBER", "SALARY",
        "CRIMINAL_RECORD", "POLITICAL_AFFILIATION", "SEXUAL_ORIENTATION", "HEALTH_CONDITION",
    ),
}
TIER_RECALL_TARGETS = {1: 0.98, 2: 0.95, 3: 0.90, 4: 0.85}
# The types whose values run over a line break (an address written on several lines). No other type does in any
# labelled source, so an entity of any other type ends at a line break.
MULTILINE_TYPES = ("STREET_ADDRESS",)
# The types whose names prose writes with a capital letter. In the cased corpora nobody here wrote, a name written all
# in lower case inside mixed-case text is almost never one ("basketball", "jazz"); the uncased backbone cannot see
# the difference, so decoding checks it, on all three name types so that a rejected name cannot move to another.
CAPITALISED_TYPES = ("PERSON", "LOCATION", "ORGANIZATION")

# What decoding asks of an entity of each type, by name (`decoding_piiner` holds the functions):
#   check    a test the entity's text must pass, else the window is decoded again without that type there
#            (a validator of `recognizers_piiner.VALIDATORS`, or "has_digit");
#   part     where the entity fails its check, the part of it that passes stays the entity ("address_and_port":
#            the address of "10.0.0.5:443"; "dates": the words holding a date, of "16.0 8/22"; "number": a phone
#            number from its first digit, "+" or "(", of "---301 944-5032");
#   letters  the type is written in digits: "none" lets no word of letters in ("exp" after a card number), "extension"
#            lets an extension marker in ("ext. 22");
#   unbroken the entity never holds whitespace.
TYPE_RULES = {
    "SSN": {"check": "ssn", "letters": "none"},
    "CREDIT_CARD": {"check": "luhn", "letters": "none"},
    "PHONE": {"check": "phone", "part": "number", "letters": "extension"},
    "EMAIL": {"check": "email", "unbroken": True},
    "IP_ADDRESS": {"check": "ip", "part": "address_and_port", "unbroken": True},
    "STREET_ADDRESS": {"check": "has_digit"},
    "URL": {"check": "url", "unbroken": True},
    "DATE": {"check": "date_numbers", "part": "dates"},
    "DATE_OF_BIRTH": {"check": "date_numbers", "part": "dates"},
    "USERNAME": {"unbroken": True},
    "CRYPTO_WALLET": {"unbroken": True},
}

PII_TYPES = tuple(t for tier in sorted(TIER_TYPES) for t in TIER_TYPES[tier])
TIER_OF = {t: tier for tier, types in TIER_TYPES.items() for t in types}

OUTSIDE = "O"
LABELS = (OUTSIDE,) + tuple(f"{prefix}-{t}" for t in PII_TYPES for prefix in ("B", "I"))
LABEL2ID = {label: i for i, label in enumerate(LABELS)}
ID2LABEL = dict(enumerate(LABELS))

assert len(PII_TYPES) == 41 and len(set(PII_TYPES)) == 41
assert set(TYPE_RULES) <= set(PII_TYPES)
assert len(LABELS) == 83


def split_label(label):
    """``"B-EMAIL" -> ("B", "EMAIL")``, ``"O" -> ("O", None)``."""
    if label == OUTSIDE:
        return OUTSIDE, None
    prefix, _, pii_type = label.partition("-")
    if prefix not in ("B", "I") or not pii_type:
        raise ValueError(f"not a BIO label: {label!r}")
    return prefix, pii_type


def label_ids_of_types(label2id, types):
    """The sorted ids of the B- and I- labels in `label2id` whose type is in `types`."""
    types = set(types)
    return sorted(i for label, i in label2id.items() if split_label(label)[1] in types)

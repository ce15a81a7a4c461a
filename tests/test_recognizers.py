"""Recognizers inside the decode: validated identifiers, the caller's patterns and lists, on a tiny random model
(whose own answers are noise, so whatever is found whole and typed right is the evidence's doing)."""

import json
import subprocess
import sys
import textwrap

import pytest
import torch
from conftest import build_tiny_tokenizer, env_without_this_repo, tiny_bert_config

from piiner.hub.configuration_piiner import PiiNerConfig
from piiner.hub.modeling_piiner import PiiNerForTokenClassification
from piiner.hub.pipeline_piiner import PiiNerTokenClassificationPipeline
from piiner.hub.recognizers_piiner import (
    RecognizerError, card_issuer_valid, date_numbers_valid, email_valid, evidence_from, mac_valid, phone_valid,
    ssn_valid)


def tiny_pipeline(seed=0, **config):
    torch.manual_seed(seed)
    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_bert_config(), **config)).eval()
    return PiiNerTokenClassificationPipeline(model=model, tokenizer=build_tiny_tokenizer(), device=-1)


@pytest.fixture(scope="module")
def pipe():
    return tiny_pipeline()


def found(entities):
    return [(e["word"], e["type"]) for e in entities]


@pytest.mark.parametrize("value, ok", [("612-40-8813", True), ("612 40 8813", True), ("000-12-3456", False),
                                       ("666-12-3456", False), ("912-12-3456", False), ("123-00-4567", False),
                                       ("123-45-0000", False), ("12-345-6789", True)])
def test_ssn_rules(value, ok):
    assert ssn_valid(value) is ok


@pytest.mark.parametrize("value, ok", [("4111 1111 1111 1111", True), ("4111 1111 1111 1112", False),
                                       ("378282246310005", True), ("1234567812345670", False)])
def test_card_numbers_pass_luhn_and_belong_to_a_network(value, ok):
    assert card_issuer_valid(value) is ok


@pytest.mark.parametrize("value, ok", [("212-555-9916", True), ("(212) 555-9916", True), ("+44 20 7946 0958", True),
                                       ("612-40-8813", False), ("2024-01-02", False), ("123-456-7890", False),
                                       ("1-800-FLOWERS", True), ("212-555-0147 ext. 22", True), ("555", False)])
def test_phone_layouts(value, ok):
    assert phone_valid(value) is ok


@pytest.mark.parametrize("value, ok", [
    # dates written in numbers, in the layouts people write: month or day first, year first, short, month and year,
    # a range, a year range; words and times around them are not read
    ("7/22", True), ("8/2", True), ("22/7", True), ("10-15-19", True), ("2024-02-11", True), ("03.11.2021", True),
    ("6/85", True), ("3/02", True), ("7/16-7/18", True), ("1990-91", True), ("June 3, 2021", True), ("1998", True),
    ("1978-04-13 12:20:39", True), ("Thursday", True), ("20240211", True),
    # numbers no calendar has: lab values, ratios and vital signs in clinical notes, a phone number
    ("40/500/10", False), ("40/17-24", False), ("31.5/11.2", False), ("16.0 8/22", False), ("98.6", False),
    ("7.37", False), ("555-201-3344", False), ("13/13", False), ("2024-13-01", False)])
def test_a_date_written_in_numbers_is_one_a_calendar_has(value, ok):
    assert date_numbers_valid(value) is ok


def test_email_and_mac_shapes():
    assert email_valid("user2@example.com") and not email_valid("example.com") and not email_valid("a@b")
    assert mac_valid("98:2a:7c:01:ff:10") and mac_valid("982a.7c01.ff10") and not mac_valid("98:2T:7X:01:ff:10")


@pytest.mark.parametrize("text, expected", [
    ("Quote 612-40-8813 when you call back", [("612-40-8813", "SSN")]),
    ("Dear 233-71-0458, your update", [("233-71-0458", "SSN")]),
    ("matched it to 355.18.2270", [("355.18.2270", "SSN")]),
    ("card 4111 1111 1111 1111 exp 09/27", [("4111 1111 1111 1111", "CREDIT_CARD")]),
    ("wire to GB82 WEST 1234 5698 7654 32 today", [("GB82 WEST 1234 5698 7654 32", "IBAN")]),
    ("from 10.0.0.5 and fe80::1ff:fe23:4567:890a.", [("10.0.0.5", "IP_ADDRESS"), ("fe80::1ff:fe23:4567:890a",
                                                                                   "IP_ADDRESS")]),
    ("contact user2@example.com today", [("user2@example.com", "EMAIL")]),
    ("see https://example.org/a?b=1.", [("https://example.org/a?b=1", "URL")]),
    ("call (212) 555-9916 now", [("(212) 555-9916", "PHONE")]),
    ("MAC 98:2a:7c:01:ff:10 seen", [("98:2a:7c:01:ff:10", "DEVICE_ID")]),
    ("ssn 233710458 on file", [("233710458", "SSN")]),
])
def test_a_validated_identifier_is_reported_whole_and_typed_whatever_the_model_says(pipe, text, expected):
    entities = pipe(text)
    assert [(e["word"], e["type"]) for e in entities if e["source"] == "builtin"] == expected
    spans = [(text.index(w), text.index(w) + len(w)) for w, _ in expected]
    for e in entities:  # and nothing the model found cuts into it
        assert e["source"] == "builtin" or not any(e["start"] < end and e["end"] > start for start, end in spans)


def test_what_fails_its_validator_or_lacks_required_context_is_left_to_the_model(pipe):
    for text in ("order 233710458 shipped", "Quote 666-40-8813 when you call", "card 4111 1111 1111 1112"):
        assert not [e for e in pipe(text) if e.get("source") == "builtin"], text


def test_a_context_word_raises_the_score_as_presidios_context_enhancer_does(pipe):
    bare = [e for e in pipe("Quote 612-40-8813 please") if e["type"] == "SSN"][0]
    named = [e for e in pipe("SSN 612-40-8813 please") if e["type"] == "SSN"][0]
    assert bare["score"] == pytest.approx(0.85) and named["score"] == pytest.approx(1.0)
    assert bare["source"] == named["source"] == "builtin"


def test_recognizers_and_lists_at_call_time(pipe):
    text = "Employee EMP-123456 met Zorblax about ticket TK-77 and mailed boss@acme.com"
    got = pipe(text, recognizers=[{"type": "EMPLOYEE_ID", "pattern": r"EMP-\d{6}", "context": ["employee"],
                                   "score": 0.6},
                                  {"type": "TICKET_ID", "pattern": r"\bTK-\d+\b"}],
               deny_list={"PERSON": ["zorblax"]}, allow_list=["boss@acme.com"])
    by_word = {e["word"]: e for e in got}
    assert by_word["EMP-123456"]["type"] == "EMPLOYEE_ID" and by_word["EMP-123456"]["score"] == pytest.approx(0.95)
    assert by_word["Zorblax"]["type"] == "PERSON" and by_word["Zorblax"]["source"] == "deny_list"
    # a type outside the model's labels is reported, with tier 4 unless the recognizer gives one
    assert (by_word["TK-77"]["type"], by_word["TK-77"]["tier"]) == ("TICKET_ID", 4)
    assert "boss@acme.com" not in by_word
    # the call's evidence is the call's: the next call is back to the pipeline's own
    assert "EMP-123456" not in {e["word"] for e in pipe(text) if e["type"] == "EMPLOYEE_ID"}


def test_saved_recognizers_travel_with_the_snapshot_into_a_fresh_process(tmp_path):
    pipe = tiny_pipeline(recognizers=[{"type": "CASE_ID", "pattern": r"CASE-\d{4}", "tier": 2}],
                         deny_list={"ORGANIZATION": ["Acme Corp"]}, allow_list=["CASE-0000"])
    snapshot = tmp_path / "snapshot"
    pipe.model.save_pretrained(snapshot)
    pipe.tokenizer.save_pretrained(snapshot)
    script = textwrap.dedent("""
        import json, sys
        sys.modules["piiner"] = None
        from transformers import pipeline
        pipe = pipeline("token-classification", model=sys.argv[1], trust_remote_code=True, device=-1)
        print(json.dumps(pipe(sys.argv[2])))
    """)
    text = "see CASE-1234 and CASE-0000 at acme corp"
    proc = subprocess.run([sys.executable, "-c", script, str(snapshot), text], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=env_without_this_repo(HF_HUB_OFFLINE="1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = {e["word"]: (e["type"], e["tier"]) for e in json.loads(proc.stdout.strip().splitlines()[-1])}
    assert got["CASE-1234"] == ("CASE_ID", 2) and got["acme corp"] == ("ORGANIZATION", 3)
    assert "CASE-0000" not in got


@pytest.mark.parametrize("spec, message", [
    ({"type": "X_ID", "pattern": "EMP-(\\d"}, r"recognizer X_ID: bad pattern"),
    ({"type": "X_ID", "pattern": "a*"}, "matches the empty string"),
    ({"type": "X_ID", "pattern": "x", "validator": "crc"}, "unknown validator 'crc'"),
    ({"type": "x id", "pattern": "x"}, "upper-case name"),
    ({"type": "X_ID", "pattern": "x", "score": 1.5}, r"score must be a number in \[0, 1\]"),
    ({"type": "X_ID", "pattern": "x", "colour": "red"}, r"unknown keys \['colour'\]"),
    ({"type": "X_ID", "pattern": "x", "not_after": "order"}, "'not_after' must be a list of words"),
])
def test_a_bad_recognizer_is_one_clear_error_before_any_text_is_read(pipe, spec, message):
    with pytest.raises(RecognizerError, match=message):
        pipe("text", recognizers=[spec])
    with pytest.raises(RecognizerError, match=message):
        PiiNerConfig(encoder_config=tiny_bert_config(), recognizers=[spec])


def test_a_user_recognizer_skips_a_match_after_one_of_its_not_after_words(pipe):
    """As the built-in phone recognizer skips a number after "order": a ratio after "CPAP" is not a date, and the
    nearer word decides when a context word stands there too."""
    rule = {"type": "DATE", "pattern": r"\d{1,2}/\d{1,2}", "context": ["seen"], "not_after": ["cpap", "pain"]}
    text = "seen 8/20 on CPAP 10/5\npain 4/10 at rest\nCPAP stopped, seen 8/21"
    got = [e["word"] for e in pipe(text, recognizers=[rule]) if e["source"] == "user"]
    assert got == ["8/20", "8/21"]


def test_bad_lists_are_refused():
    with pytest.raises(RecognizerError, match="deny_list"):
        evidence_from(deny_list={"PERSON": "Zorblax"})
    with pytest.raises(RecognizerError, match="allow_list"):
        evidence_from(allow_list="Acme")


# -- 88.1: where an entity stands does not decide whether it is found ------------------------------------------------

FILLER = ("the meeting moved to the blue room after lunch and everyone agreed that the notes would be shared later "
          "with the team once the draft was ready ").split()


@pytest.mark.parametrize("entity, kind", [("contact user2@example.com today", "EMAIL"),
                                          ("called from 212-555-9916 about", "PHONE"),
                                          ("met Zorblax Quint there", "PERSON")])
def test_an_entity_is_found_whole_at_every_word_boundary_across_windows_and_paragraphs(entity, kind):
    """The entity slid through every word boundary of a filler text three windows long (64-token windows), with a
    paragraph break in it: found whole, with its type, wherever it stands, as it is found alone."""
    pipe = tiny_pipeline(deny_list={"PERSON": ["Zorblax Quint"]})
    value = {"EMAIL": "user2@example.com", "PHONE": "212-555-9916", "PERSON": "Zorblax Quint"}[kind]
    alone = [(e["word"], e["type"]) for e in pipe(entity) if e["type"] == kind]
    assert alone == [(value, kind)]
    words = FILLER * 3
    words[len(FILLER)] = words[len(FILLER)] + "\n\n"
    texts = [" ".join(words[:i] + [entity] + words[i:]) for i in range(len(words) + 1)]
    for text, entities in zip(texts, pipe(texts, batch_size=8)):
        assert [(e["word"], e["type"]) for e in entities if e["type"] == kind] == alone, text


def test_a_card_written_with_dots_is_one_card_not_a_mac_address_and_a_number(pipe):
    """The dotted MAC layout (xxxx.xxxx.xxxx) took the first twelve digits of "5564.1188.7683.8209"."""
    got = [(e["word"], e["type"]) for e in pipe("pay with card no. 5564.1188.7683.8209 (exp 04/29)")
           if e["source"] == "builtin"]
    assert got == [("5564.1188.7683.8209", "CREDIT_CARD")]


def test_a_card_number_followed_by_more_digits_is_still_found():
    # The greedy match ran on into the expiry date ("... 5556 04"), failed Luhn, and the card was lost (found on the
    # hand-written identifier set).
    from piiner.hub.recognizers_piiner import evidence_from

    evidence = evidence_from()
    text = "4000 0566 5566 5556 04/26 -> declined"
    assert [(m.type, text[m.start:m.end]) for m in evidence.find(text)] == [("CREDIT_CARD", "4000 0566 5566 5556")]
    assert not evidence.find("4000 0566 5566 5557 04/26")  # no prefix that passes Luhn: nothing


def test_a_phone_numbers_extension_is_part_of_its_match():
    # The decode keeps "ext. 22" in a phone number; the recognizer ended the match before it and, its labels forced,
    # cut the entity there (found on the hand-written identifier set).
    from piiner.hub.recognizers_piiner import evidence_from

    evidence = evidence_from()
    for text, phone in (("her number: 1-800-555-0199 ext. 22 (no)", "1-800-555-0199 ext. 22"),
                        ("call 212-555-0147 x304 now", "212-555-0147 x304"),
                        ("212-555-0147 extra", "212-555-0147")):
        assert [text[m.start:m.end] for m in evidence.find(text) if m.type == "PHONE"] == [phone]


@pytest.mark.parametrize("text, expected", [
    ("S S N  5 3 6 - 2 2 - 8 4 9 1", ("SSN", "5 3 6 - 2 2 - 8 4 9 1")),
    ("c a r d 4 1 1 1  1 1 1 1  1 1 1 1  1 1 1 1", ("CREDIT_CARD", "4 1 1 1  1 1 1 1  1 1 1 1  1 1 1 1")),
    ("call 2 1 2 - 5 5 5 - 0 1 4 7 now", ("PHONE", "2 1 2 - 5 5 5 - 0 1 4 7")),
])
def test_an_identifier_spaced_out_one_character_at_a_time_is_matched_whole(pipe, text, expected):
    # OCR and boxed forms space identifiers out; the patterns read such a run closed up, the span keeps its spaces.
    assert [(m.type, text[m.start:m.end]) for m in evidence_from().find(text)] == [expected]
    assert [(e["type"], e["word"]) for e in pipe(text) if e["source"] == "builtin"] == [expected]


def test_spaced_out_words_without_a_digit_are_read_as_written():
    assert not evidence_from().find("a b c d e f g and 1 2")


@pytest.mark.parametrize("text, phone", [
    ("Tracking 9400 1000, order 88213, call 1-888-555-0110 with questions", "1-888-555-0110"),
    ("account number 212-555-0147", None),
    ("order 212-555-0147 shipped", None),
    ("call about order 212-555-0147", None),
])
def test_the_nearer_word_decides_whether_a_phone_shaped_number_is_a_phone(text, phone):
    got = [text[m.start:m.end] for m in evidence_from().find(text) if m.type == "PHONE"]
    assert got == ([phone] if phone else [])


@pytest.mark.parametrize("value, ok", [("2023-118842", False), ("2024-02-11 09:41", False), ("212 5550 147", False),
                                       ("1 (800) 555-0142", True), ("+12125550163", True), ("(212)5550147", True),
                                       ("020 7946 0855", True), ("+1-415-555-0168 x204", True),
                                       ("375.356.7981, ext. 99", True), ("--301 944-5032", False),
                                       (".212.555.9916", False)])
def test_a_north_american_number_is_grouped_3_3_4_and_a_phone_holds_no_time(value, ok):
    assert phone_valid(value) is ok


def test_an_ipv6_address_ending_in_ipv4_is_one_address():
    text = "::ffff:192.0.2.128 mapped, 64:ff9b::192.0.2.33 too"
    assert [text[m.start:m.end] for m in evidence_from().find(text)] == ["::ffff:192.0.2.128", "64:ff9b::192.0.2.33"]


def test_an_imei_is_a_device_id_after_a_word_naming_it():
    for text, imei in (("phone lost, imei 35 017568 205258 0", "35 017568 205258 0"),
                       ("handset IMEI 490154203237518 reported stolen", "490154203237518"),
                       ("box 490154203237518 shipped", None), ("imei 490154203237519", None)):
        got = [text[m.start:m.end] for m in evidence_from().find(text) if m.type == "DEVICE_ID"]
        assert got == ([imei] if imei else []), text


def test_a_url_the_model_finds_needs_a_host():
    # "HTTP/" of a log line's "GET /login HTTP/1.1" was reported as a URL; the decode now checks URLs.
    from piiner.hub.decoding_piiner import TYPE_CHECKS

    assert not TYPE_CHECKS["URL"]("HTTP/") and TYPE_CHECKS["URL"]("example.com/help")


@pytest.mark.parametrize("kind, text, want", [
    # Nursing notes give pagers as four to six digits after "pager", "pg" or "beeper"; de-id corpora label them
    # phone numbers, and the built-in layouts need ten digits.
    ("PHONE", "Pager #54321 \nPG 33445\nreached at beeper number 55037 for consents.\nBP 12345 HR 9876 \n"
              "pager 1.5 hours late\nTime 1:20", ["54321", "33445", "55037"]),
    # Short dates, and not ventilator settings, pain scores or fractions.
    ("DATE", "admitted 8/20/02, f/u 7/22\nweaned to PSV 10/5 c 40%\n8/10 CP relieved\nIVF changed to 1/2 NS\n"
             "vent 5/30% \n1/2NS at 100cc\nseen 9/14 by team", ["8/20/02", "7/22", "9/14"]),
    # Years written "'92", and not feet or a range's end ("HOB 30'", "RR 13-18'").
    ("DATE", "PMH: MI '92, CABG x3 '95.\nHOB 30' \nRR 13-18' \nsince '04", ["92", "95", "04"]),
    # A name right after a family word (in mixed case, not an all-caps word), and a signature before a credential.
    ("PERSON", "Daughter Maria called. son in to visit.\nNephew, Neil Meitz of Towson visited. DAUGHTER IN.\n"
               "wife\nPlease see flow sheet.\nV. Finn, RRT\nq. lander rrt\nCA\nRD--PA LINE PLACED\n"
               "J. Chang PA into evaluate",
     ["Maria", "Neil Meitz", "V. Finn", "q. lander", "J. Chang"]),
    # A name after "Dr": with its hyphenated part, with a capitalised second name, without a possessive "'s", and
    # not a word a title stands before in the notes ("DR AND FAMILY"), nor "drawn".
    ("PERSON", "spoke w/dr vasquez, dr small today\nEXAMINED BY DR LALLY; per dr williams-nuzzo.\n"
               "Dr. Art White signed. after dr vascuez's meeting\nDR AND FAMILY, labs drawn",
     ["dr vasquez", "dr small", "DR LALLY", "dr williams-nuzzo", "Dr. Art White", "dr vascuez"]),
    # A hospital's name before "hospital" or "hosp", without the noun, and not a word that leads into it.
    ("LOCATION", "ADMITTED FROM UNION HOSP. FOR ANGINA\nto St. Mary Hospital by ambulance\n911>CALVERT HOSPITAL.\n"
                 "TIRED OF BEING IN HOSPITAL. admitted to hospital 9/3\nfrom outside hospital, Holy Cross Hospital",
     ["UNION", "St. Mary", "CALVERT", "Holy Cross"]),
])
def test_the_clinical_recognizers_take_pagers_and_short_dates_and_leave_look_alikes(kind, text, want):
    import os

    from piiner.snapshot import load_evidence

    rules = load_evidence(os.path.join(os.path.dirname(__file__), "..", "configs", "recognizers", "clinical.yaml"))
    pipe = tiny_pipeline(recognizers=rules["recognizers"])
    assert [e["word"] for e in pipe(text) if e["type"] == kind and e["source"] == "user"] == want


def test_several_recognizers_files_add_up_in_order_and_a_bad_one_is_named(tmp_path):
    from piiner.snapshot import load_evidence

    rules, lists, bad = tmp_path / "rules.yaml", tmp_path / "lists.yaml", tmp_path / "bad.yaml"
    rules.write_text("recognizers:\n  - {type: CASE_ID, pattern: 'CASE-\\d{4}'}\n"
                     "deny_list: {LOCATION: [harbor]}\nallow_list: [Acme]\n")
    lists.write_text("deny_list: {LOCATION: [quartermain], PERSON: [helen]}\nallow_list: [Initech]\n")
    bad.write_text("recognizers:\n  - {type: CASE_ID, pattern: '(unclosed'}\n")
    assert load_evidence([str(rules), str(lists)]) == {
        "recognizers": [{"type": "CASE_ID", "pattern": "CASE-\\d{4}"}], "allow_list": ["Acme", "Initech"],
        "deny_list": {"LOCATION": ["harbor", "quartermain"], "PERSON": ["helen"]}}
    assert load_evidence(str(lists)) == load_evidence([str(lists)])
    with pytest.raises(ValueError, match="bad.yaml"):
        load_evidence([str(rules), str(bad)])

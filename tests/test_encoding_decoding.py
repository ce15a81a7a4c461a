"""encoding_piiner and decoding_piiner: char ids, padding, windowed encoding, window merging and entity decoding."""

import functools
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import BertConfig

from conftest import TINY_VOCAB, OverflowStopsEarly, build_tiny_tokenizer
from piiner.hub.checksums import fold_width
from piiner.hub.configuration_piiner import PiiNerConfig
from piiner.hub.decoding_piiner import decode_entities, merge_windows
from piiner.hub.encoding_piiner import (
    HASHED_CHAR_BUCKETS,
    _WordIndex,
    default_max_length,
    encode_char,
    encode_texts,
    pad_char_ids,
    paragraphs,
    token_char_ids,
    trim_char_ids,
)
from piiner.hub.pii_schema import ID2LABEL, LABEL2ID, TIER_OF

CONFIG = PiiNerConfig()
VOCAB = CONFIG.char_vocab_size


@functools.lru_cache(maxsize=1)
def _session_tokenizer():
    # hypothesis tests cannot take function-scoped fixtures
    return build_tiny_tokenizer()


def tags_for_spans(offsets, spans):
    """Gold BIO tag ids for tokens whose offsets fall inside the given (start, end, type) spans."""
    tags = []
    for s, e in offsets:
        tag = "O"
        for start, end, pii_type in spans:
            if e > s and start <= s and e <= end:
                first = not any(start <= ps and pe <= end and pe > ps for ps, pe in offsets[: len(tags)])
                tag = ("B-" if first else "I-") + pii_type
        tags.append(LABEL2ID[tag])
    return tags


# encode_char ---------------------------------------------------------------------------------------------------


@given(st.characters(codec=None))
@settings(max_examples=300, deadline=None)
def test_every_code_point_gets_a_valid_non_padding_id(ch):
    assert 0 < encode_char(ch, VOCAB) < VOCAB


@pytest.mark.parametrize("ch", ["\x00", "\ud800", "\udfff", "\U0010ffff", "中", "🙂", "é", "\u00a0"])
def test_awkward_characters_stay_in_range(ch):
    for vocab in (66, 256, 512, 4096):
        assert 0 < encode_char(ch, vocab) < vocab


def test_direct_ids_below_the_hashed_range():
    assert [encode_char(c, VOCAB) for c in "Az9@é"] == [ord(c) for c in "Az9@é"]
    assert encode_char(chr(VOCAB - HASHED_CHAR_BUCKETS), VOCAB) >= VOCAB - HASHED_CHAR_BUCKETS


def test_hashed_ids_are_pinned():
    # A changed mapping (or Python's per-process salted hash()) would scramble the char embeddings of every
    # trained checkpoint.
    assert [encode_char(c, 512) for c in "中🙂\x00"] == [493, 484, 448]


def test_hashed_ids_spread_over_buckets():
    ids = {encode_char(chr(cp), VOCAB) for cp in range(0x4E00, 0x4E00 + 2000)}
    assert len(ids) == HASHED_CHAR_BUCKETS


def test_tiny_char_vocab_is_rejected():
    with pytest.raises(ValueError, match="char_vocab_size"):
        encode_char("a", 64)


def test_regex_whitespace_matches_str_isspace():
    # Word boundaries are found with \S+; the contract says str.isspace.
    every_char = "".join(chr(cp) for cp in range(0x110000))
    assert set(re.findall(r"\s", every_char)) == {c for c in every_char if c.isspace()}


# token_char_ids ------------------------------------------------------------------------------------------------


def chars(ids):
    return "".join(chr(i) for i in ids)


def test_each_token_reads_its_whole_source_word_with_case_and_punctuation(tiny_tokenizer):
    text = "Mail\t(John.Smith@x.com)\nSSN:123-45-6789"
    enc = tiny_tokenizer(text, return_offsets_mapping=True)
    per_token = token_char_ids(text, enc["offset_mapping"], 128, VOCAB)
    words = [chars(ids) for ids in per_token]
    assert words[0] == "" and words[-1] == ""  # [CLS], [SEP]
    for (s, e), word in zip(enc["offset_mapping"][1:-1], words[1:-1]):
        assert text[s:e].lower() in word.lower()
        assert word in text.split()
    assert set(words[1:-1]) == {"Mail", "(John.Smith@x.com)", "SSN:123-45-6789"}


def test_tensor_offsets_and_special_offsets():
    assert token_char_ids("ab cd", torch.tensor([[0, 0], [3, 5], [0, 0]]), 128, VOCAB) == [[], [99, 100], []]


def test_offsets_with_leading_space_resolve_to_the_word():
    # SentencePiece tokenizers may count the preceding space into a token.
    assert chars(token_char_ids("hi John", [(2, 7)], 128, VOCAB)[0]) == "John"
    assert token_char_ids("a   b", [(1, 3)], 128, VOCAB) == [[]]


def test_words_of_64_chars_are_seen_whole_with_default_width():
    iban = "DE" + "0123456789" * 6 + "12"  # 64 characters
    text = f"IBAN: {iban}."
    per_token = token_char_ids(text, [(6, 8), (66, 70)], CONFIG.max_word_chars, VOCAB)
    assert chars(per_token[0]) == chars(per_token[1]) == iban + "."


@pytest.mark.parametrize("position", [0, 9, 57, 150, 290, 299])
def test_long_word_window_is_centred_on_the_token(position):
    # Every character of the 300-char word is distinct, so the ids tell where the window sits.
    word = "".join(chr(0x100 + i) for i in range(300))
    text = "x " + word + " y"
    start = 2 + position
    ids = token_char_ids(text, [(start, start + 1)], 20, 4096)[0]
    assert ids == [ord(c) for c in text[ids[0] - 0x100 + 2:][:20]]
    window_start = 2 + ids[0] - 0x100
    assert window_start <= start < window_start + 20
    assert 2 <= window_start <= 2 + len(word) - 20
    if 10 <= position <= 290:
        assert window_start == start - 10  # centred, not merely containing the token


# pad_char_ids --------------------------------------------------------------------------------------------------


def test_pad_char_ids_shapes_and_values():
    batch = [[[], [5, 6, 7]], [[1]]]
    out = pad_char_ids(batch)
    assert out.dtype == torch.long and out.shape == (2, 2, 3)
    assert out.tolist() == [[[0, 0, 0], [5, 6, 7]], [[1, 0, 0], [0, 0, 0]]]
    assert pad_char_ids(batch, seq_len=4, min_chars=5).shape == (2, 4, 5)
    assert pad_char_ids([[[], []]], min_chars=3).tolist() == [[[0, 0, 0], [0, 0, 0]]]


def test_trim_char_ids_drops_trailing_padding_columns_of_tensors_and_arrays():
    # encode_texts trims its NumPy char ids, the ONNX runtime a tensor's: the same columns go.
    ids = np.array([[[3, 4, 0, 0, 0], [5, 0, 0, 0, 0]]])
    for given_ids in (ids, torch.from_numpy(ids)):
        assert trim_char_ids(given_ids).tolist() == [[[3, 4], [5, 0]]]
        assert trim_char_ids(given_ids, min_chars=3).tolist() == [[[3, 4, 0], [5, 0, 0]]]
    assert trim_char_ids(np.zeros((1, 2, 4), dtype=np.int64), min_chars=2).shape == (1, 2, 2)


def test_pad_char_ids_rejects_short_seq_len():
    with pytest.raises(ValueError, match="seq_len"):
        pad_char_ids([[[1], [2], [3]]], seq_len=2)


# encode_texts --------------------------------------------------------------------------------------------------


def test_encode_texts_adds_char_ids_matching_token_char_ids(tiny_tokenizer):
    texts = ["Call (John) at john@x.com.", "SSN:123-45-6789"]
    enc = encode_texts(tiny_tokenizer, texts, CONFIG)
    assert set(enc) >= {"input_ids", "attention_mask", "offset_mapping", "overflow_to_sample_mapping", "char_ids"}
    windows, seq_len = enc["input_ids"].shape
    assert windows == 2 and enc["char_ids"].shape[:2] == (2, seq_len)
    assert enc["char_ids"].shape[2] >= max(CONFIG.char_kernel_sizes)
    for w, text in enumerate(texts):
        expected = pad_char_ids([token_char_ids(text, enc["offset_mapping"][w], 128, VOCAB)], seq_len=seq_len)
        width = expected.shape[2]
        assert torch.equal(enc["char_ids"][w, :, :width], expected[0])
        assert not enc["char_ids"][w, :, width:].any()


def test_full_width_forms_are_read_as_the_ascii_they_stand_for_with_offsets_into_the_text(tiny_tokenizer):
    """East Asian input methods and some forms write letters, digits and punctuation full width ("０２０"); the
    vocabulary has none of them, so a number written so was [UNK] tokens and went unfound. Both the encoder and the
    char CNN now read them as their ASCII forms, one code point for one, so the offsets stay the text's own."""
    ascii_text = "SSN:123-45-6789 john@x.com (call me)"
    full_width = "ＳＳＮ：１２３－４５－６７８９\u3000ｊｏｈｎ＠ｘ．ｃｏｍ （ｃａｌｌ ｍｅ）"
    assert len(full_width) == len(ascii_text)
    a, f = (encode_texts(tiny_tokenizer, text, CONFIG) for text in (ascii_text, full_width))
    assert tiny_tokenizer.unk_token_id not in f["input_ids"][0].tolist()
    for key in ("input_ids", "offset_mapping", "char_ids"):
        assert torch.equal(a[key], f[key]), key


def test_fold_width_folds_only_the_given_range_and_keeps_every_offset():
    text = "ＳＳＮ １２３ and ＪＯ"
    assert fold_width(text) == "SSN 123 and JO"
    assert fold_width(text, 4, 7) == "ＳＳＮ 123 and ＪＯ"
    assert fold_width("plain text", 2, 5) == "plain text"


def test_a_line_break_marker_makes_each_line_break_a_token_without_characters(tiny_tokenizer):
    """The tokenizer drops "\n" as whitespace: with the config's marker the encoder sees one token per line break,
    at the break's own offsets, with no char ids (so outside the CRF chain); every other token is as before."""
    text = "Ann Lee\nBob\ncalled"
    plain = encode_texts(tiny_tokenizer, [text], CONFIG, return_tensors=None)
    marked = encode_texts(tiny_tokenizer, [text], PiiNerConfig(line_break_marker="\u00b6"), return_tensors=None)
    offsets = [tuple(o) for o in marked["offset_mapping"][0]]
    breaks = [k for k, (a, b) in enumerate(offsets) if b > a and text[a:b] == "\n"]
    assert [offsets[k] for k in breaks] == [(7, 8), (11, 12)]
    assert not any(any(marked["char_ids"][0][k]) for k in breaks)
    assert [o for k, o in enumerate(offsets) if k not in breaks] == [tuple(o) for o in plain["offset_mapping"][0]]
    for bad in ("\n", "ab"):
        with pytest.raises(ValueError, match="line_break_marker must be one character that is not whitespace"):
            PiiNerConfig(line_break_marker=bad)


@pytest.mark.parametrize("text, expected", [
    ("one paragraph\nof two lines", [(0, 26)]),
    ("Ann\n\nBob", [(0, 3), (5, 8)]),
    ("Ann \n \t\n\n  Bob\n", [(0, 4), (11, 15)]),  # a blank line may hold spaces; the gap is all the whitespace
    ("\n\nAnn\n\n", [(2, 5)]),
    ("", [(0, 0)]),
    ("\n\n", [(2, 2)]),
])
def test_paragraphs_are_the_stretches_between_blank_lines(text, expected):
    assert paragraphs(text) == expected


def test_each_paragraph_is_windowed_alone_with_offsets_into_its_text(tiny_tokenizer):
    """No window holds two paragraphs: the second paragraph's window is the one it gets alone, moved to where it
    stands in its text, and numbered as a window of that text."""
    texts = ["call john\n\nsmith at home", "john smith"]
    for tensors in (None, "pt"):
        got = encode_texts(tiny_tokenizer, texts, CONFIG, return_tensors=tensors)
        assert list(got["overflow_to_sample_mapping"]) == [0, 0, 1]
        for w, (piece, shift) in enumerate([("call john", 0), ("smith at home", 11), ("john smith", 0)]):
            alone = encode_texts(tiny_tokenizer, [piece], CONFIG, return_tensors=tensors)
            n = int(torch.as_tensor(alone["attention_mask"][0]).sum())
            assert list(got["input_ids"][w][:n]) == list(alone["input_ids"][0][:n])
            offsets = [tuple(int(x) for x in o) for o in got["offset_mapping"][w][:n]]
            assert offsets == [(a + shift, b + shift) if b > a else (a, b)
                               for a, b in (tuple(int(x) for x in o) for o in alone["offset_mapping"][0][:n])]
            assert all(texts[w // 2][a:b] == piece[a - shift:b - shift] for a, b in offsets if b > a)


@given(
    st.lists(
        st.one_of(st.text(alphabet="ab(J)@.-:9é中🙂", min_size=1, max_size=14), st.sampled_from([" ", "\t", "\n  "])),
        max_size=12,
    )
)
@settings(max_examples=25, deadline=None)
def test_vectorised_char_ids_equal_the_per_token_reference(pieces):
    tokenizer = _session_tokenizer()
    text = "".join(pieces)
    config = PiiNerConfig(max_word_chars=6)
    enc = encode_texts(tokenizer, [text], config)
    reference = token_char_ids(text, enc["offset_mapping"][0], 6, config.char_vocab_size)
    expected = pad_char_ids([reference], seq_len=enc["input_ids"].shape[1])[0]
    got = enc["char_ids"][0]
    assert torch.equal(got[:, : expected.shape[1]], expected) and not got[:, expected.shape[1]:].any()
    # Arbitrary offsets too: spanning whitespace, across words, inside long words.
    offsets = [(i, j) for i in range(len(text)) for j in (i + 1, i + 3, i + 9) if j <= len(text)]
    reference = pad_char_ids([token_char_ids(text, offsets, 6, config.char_vocab_size)])[0]
    got = torch.from_numpy(_WordIndex(text, 6, config.char_vocab_size).char_array(offsets))
    width = max(reference.shape[-1], got.shape[-1])
    pad = torch.nn.functional.pad
    assert torch.equal(pad(got, (0, width - got.shape[-1])), pad(reference, (0, width - reference.shape[-1])))
    # Training features (lists) and inference inputs (tensors) carry the same ids: no train/serve skew.
    lists = encode_texts(tokenizer, [text], config, return_tensors=None)["char_ids"]
    tensors = encode_texts(tokenizer, [text], config)["char_ids"]
    assert torch.equal(pad_char_ids(lists, seq_len=tensors.shape[1], min_chars=tensors.shape[2]), tensors)


@pytest.mark.parametrize("text", ["", " ", "\t\n  \n"])
def test_empty_and_whitespace_texts_encode(tiny_tokenizer, text):
    enc = encode_texts(tiny_tokenizer, [text, "john"], CONFIG)
    assert enc["input_ids"].shape[0] == 2
    assert not enc["char_ids"][0].any()


def test_long_text_becomes_overlapping_windows_that_cover_every_token(tiny_tokenizer):
    text = " ".join(f"w{i % 10} john" for i in range(300))
    full = tiny_tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)["offset_mapping"]
    enc = encode_texts(tiny_tokenizer, [text], CONFIG, max_length=32, stride=8)
    assert enc["input_ids"].shape[1] <= 32
    assert enc["overflow_to_sample_mapping"].tolist() == [0] * enc["input_ids"].shape[0]
    covered = {tuple(o) for window in enc["offset_mapping"].tolist() for o in window if o[1] > o[0]}
    assert covered == {tuple(o) for o in full}
    first, second = ({tuple(o) for o in w if o[1] > o[0]} for w in enc["offset_mapping"][:2].tolist())
    assert len(first & second) == 8


@pytest.mark.parametrize("return_tensors", ["pt", None])
def test_windows_that_stop_short_of_the_text_are_an_error_naming_the_tokenizers_bug(tiny_tokenizer, return_tensors):
    long_text = " ".join(f"w{i % 10} john" for i in range(100))
    broken = OverflowStopsEarly(tiny_tokenizer)
    encode_texts(broken, ["john smith", "w1 " * 20], CONFIG, max_length=32, stride=8)  # two windows: nothing lost
    with pytest.raises(RuntimeError, match=r"tokenizers#2091.*0\.23\.3"):
        encode_texts(broken, ["john smith", long_text], CONFIG, max_length=32, stride=8, return_tensors=return_tensors)


@pytest.mark.parametrize("text", ["john smith " * 40 + "\x00\x01 \u200b" * 30, "\u0301" * 70 + " john" * 60,
                                  "\n\n" + "\t" * 80 + "w1 " * 90 + " " * 100])
def test_texts_whose_edges_hold_no_token_pass_the_window_check(tiny_tokenizer, text):
    enc = encode_texts(tiny_tokenizer, [text], CONFIG, max_length=32, stride=8)
    assert enc["input_ids"].shape[0] > 1


def test_default_window_length(tiny_tokenizer, tiny_encoder_config):
    config = PiiNerConfig(encoder_config=tiny_encoder_config)
    assert default_max_length(tiny_tokenizer, config) == 64  # tokenizer limit < 128 positions < 512
    tiny_tokenizer_long = type(tiny_tokenizer)(tokenizer_object=tiny_tokenizer.backend_tokenizer,
                                               model_max_length=int(1e30))
    assert default_max_length(tiny_tokenizer_long, config) == 128


def test_return_lists(tiny_tokenizer):
    enc = encode_texts(tiny_tokenizer, "john smith", CONFIG, return_tensors=None)
    assert isinstance(enc["char_ids"], list)
    assert [chars(ids) for ids in enc["char_ids"][0]] == ["", "john", "smith", ""]


@pytest.mark.parametrize(
    "bad, name",
    [(None, "NoneType"), (b"bytes", "bytes"), (3, "int"), ([["nested"]], "list"), (["ok", None], "NoneType")],
)
def test_bad_inputs_raise_type_error_naming_them(tiny_tokenizer, bad, name):
    with pytest.raises(TypeError, match=name):
        encode_texts(tiny_tokenizer, bad, CONFIG)


def test_empty_list_and_bad_stride_raise_value_error(tiny_tokenizer):
    with pytest.raises(ValueError, match="empty"):
        encode_texts(tiny_tokenizer, [], CONFIG)
    with pytest.raises(ValueError, match="stride"):
        encode_texts(tiny_tokenizer, "john", CONFIG, max_length=16, stride=14)
    with pytest.raises(ValueError, match="max_length"):
        encode_texts(tiny_tokenizer, "john", CONFIG, max_length=2)


def test_slow_tokenizer_is_rejected(tmp_path):
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    (tmp_path / "vocab.txt").write_text("\n".join(TINY_VOCAB))
    slow = BertTokenizerLegacy(str(tmp_path / "vocab.txt"))
    with pytest.raises(ValueError, match="fast tokenizer"):
        encode_texts(slow, "john", CONFIG)


# merge_windows -------------------------------------------------------------------------------------------------


def test_merge_keeps_the_most_central_prediction():
    # Tokens at offsets 0..9, windows [0..5] and [3..9] with specials around them.
    offsets = [(i, i + 1) for i in range(10)]
    w1 = [(0, 0)] + offsets[0:6] + [(0, 0)]
    w2 = [(0, 0)] + offsets[3:10] + [(0, 0)] + [(0, 0)]  # trailing padding
    tags1 = [0] + [1] * 6 + [0]
    tags2 = [0] + [2] * 7 + [0, 0]
    merged_offsets, tags, scores = merge_windows(
        [(w1, tags1, [0.5] * len(w1)), (w2, torch.tensor(tags2), torch.full((len(w2),), 0.9))]
    )
    assert merged_offsets == offsets
    # Token 3: distance 3 in w1 (positions 0..5 -> min(3, 2) = 2) vs 0 in w2 -> w1. Token 4: 1 vs 1 -> first seen.
    # Token 5: 0 in w1 vs 2 in w2 -> w2.
    assert tags == [1, 1, 1, 1, 1, 2, 2, 2, 2, 2]
    assert scores[:5] == [0.5] * 5 and scores[5:] == pytest.approx([0.9] * 5)


def test_merge_keeps_tokens_sharing_offsets():
    w = [(0, 0), (0, 1), (0, 1), (1, 2), (0, 0)]
    merged, tags, _ = merge_windows([(w, [0, 3, 4, 4, 0], [1.0] * 5)])
    assert merged == [(0, 1), (0, 1), (1, 2)] and tags == [3, 4, 4]


# decode_entities -----------------------------------------------------------------------------------------------


def decode(text, offsets, labels, scores=None):
    ids = [LABEL2ID[label] for label in labels]
    return decode_entities(text, offsets, ids, scores or [0.9] * len(ids), ID2LABEL, TIER_OF)


def test_decode_builds_whole_entities_with_exact_offsets():
    text = "Hi John Smith, mail j@x.io"
    offsets = [(0, 0), (0, 2), (3, 7), (8, 13), (13, 14), (15, 19), (20, 26), (0, 0)]
    labels = ["O", "O", "B-PERSON", "I-PERSON", "O", "O", "B-EMAIL", "O"]
    entities = decode(text, offsets, labels, [1.0, 1.0, 0.8, 0.6, 1.0, 1.0, 0.7, 1.0])
    assert entities == [
        {"entity_group": "PERSON", "type": "PERSON", "tier": 2, "score": 0.6, "start": 3, "end": 13,
         "word": "John Smith"},
        {"entity_group": "EMAIL", "type": "EMAIL", "tier": 2, "score": 0.7, "start": 20, "end": 26, "word": "j@x.io"},
    ]


def test_decode_stray_inside_tag_starts_an_entity_and_type_change_splits():
    text = "aa bb cc dd"
    offsets = [(0, 2), (3, 5), (6, 8), (9, 11)]
    got = decode(text, offsets, ["I-SSN", "I-SSN", "I-PIN", "B-PIN"])
    assert [(e["type"], e["word"]) for e in got] == [("SSN", "aa bb"), ("PIN", "cc"), ("PIN", "dd")]
    assert got[0]["tier"] == 1 and got[1]["tier"] == 4


def test_an_entity_ends_at_a_tab_as_at_a_line_break_unless_its_type_runs_over_lines():
    # A tab separates a form's fields ("Sex/Gender\tman", "Name\tLisa Gilette\tDOB ...") and the tokenizer reads it
    # as a space, so the model can run a value on into the next field; no gold span in the corpus holds a tab.
    text = "Lisa Gilette\tKristen Quinn\t12 Main St\tSpringfield"
    offsets = [(0, 4), (5, 12), (13, 20), (21, 26), (27, 29), (30, 34), (35, 37), (38, 49)]
    labels = ["B-PERSON", "I-PERSON", "I-PERSON", "I-PERSON", "B-STREET_ADDRESS", "I-STREET_ADDRESS",
              "I-STREET_ADDRESS", "I-STREET_ADDRESS"]
    ids = [LABEL2ID[label] for label in labels]
    got = decode_entities(text, offsets, ids, [0.9] * len(ids), ID2LABEL, TIER_OF, ["STREET_ADDRESS"])
    assert [(e["type"], e["word"]) for e in got] == [
        ("PERSON", "Lisa Gilette"), ("PERSON", "Kristen Quinn"), ("STREET_ADDRESS", "12 Main St\tSpringfield")]


def test_an_entity_ends_at_a_line_break_unless_its_type_runs_over_lines_and_every_entity_at_a_blank_line():
    # The tokenizer reads a line break as a space, so the model can tag a name on to the next line: "Coach: Lisa
    # Gilette\nKristen Quinn" is two persons, "Name: John\nTIN: ..." a person and then a field label.
    text = "Coach: Lisa Gilette\nKristen Quinn\n12 Main St\nSpringfield"
    offsets = [(0, 5), (5, 6), (7, 11), (12, 19), (20, 27), (28, 33), (34, 36), (37, 41), (42, 44), (45, 56)]
    labels = ["O", "O", "B-PERSON", "I-PERSON", "I-PERSON", "I-PERSON", "B-STREET_ADDRESS", "I-STREET_ADDRESS",
              "I-STREET_ADDRESS", "I-STREET_ADDRESS"]
    ids = [LABEL2ID[label] for label in labels]
    got = decode_entities(text, offsets, ids, [0.9] * len(ids), ID2LABEL, TIER_OF, ["STREET_ADDRESS"])
    assert [(e["type"], e["word"]) for e in got] == [
        ("PERSON", "Lisa Gilette"), ("PERSON", "Kristen Quinn"), ("STREET_ADDRESS", "12 Main St\nSpringfield")]
    # A blank line ends a paragraph, and any entity with it: an address does not run on into the next message
    # ("... Springfield\n\nKristen Quinn's order", tagged I-STREET_ADDRESS throughout, is an address and a name).
    text = "12 Main St\nSpringfield\n \nKristen Quinn"
    offsets = [(0, 2), (3, 7), (8, 10), (11, 22), (25, 32), (33, 38)]
    ids = [LABEL2ID["B-STREET_ADDRESS"]] + [LABEL2ID["I-STREET_ADDRESS"]] * 5
    got = decode_entities(text, offsets, ids, [0.9] * len(ids), ID2LABEL, TIER_OF, ["STREET_ADDRESS"])
    assert [e["word"] for e in got] == ["12 Main St\nSpringfield", "Kristen Quinn"]
    # The model's config says which types run over lines: by default the address, where the schema has one.
    config = PiiNerConfig(encoder_config=BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                                                    intermediate_size=8, vocab_size=10))
    assert config.multiline_types == ["STREET_ADDRESS"]
    with pytest.raises(ValueError, match="multiline_types names types that are not label types: \\['ADDRESS'\\]"):
        PiiNerConfig(encoder_config=config.encoder_config, multiline_types=["ADDRESS"])
    # and which types need a capital letter in mixed-case text: by default the three name types
    assert config.capitalised_types == ["PERSON", "LOCATION", "ORGANIZATION"]
    with pytest.raises(ValueError, match="capitalised_types names types that are not label types: \\['ORG'\\]"):
        PiiNerConfig(encoder_config=config.encoder_config, capitalised_types=["ORG"])


def test_decode_trims_whitespace_and_skips_special_tokens():
    text = "x  John\t"
    got = decode(text, [(0, 0), (1, 7), (7, 8), (0, 0)], ["O", "B-PERSON", "I-PERSON", "O"])
    assert [(e["start"], e["end"], e["word"]) for e in got] == [(3, 7, "John")]
    assert decode(text, [(1, 3)], ["B-PERSON"]) == []


def test_decode_reads_labels_from_the_given_id2label():
    id2label = {"0": "O", "1": "B-ZIP", "2": "I-ZIP"}  # JSON-style string keys, a label set of another checkpoint
    got = decode_entities("at 90210", [(3, 8)], [1], [0.5], id2label, {"ZIP": 9})
    assert got[0]["type"] == "ZIP" and got[0]["tier"] == 9
    with pytest.raises(ValueError, match="tag id 7"):
        decode_entities("at 90210", [(3, 8)], [7], [0.5], id2label, {})
    with pytest.raises(ValueError, match="differ in length"):
        decode_entities("at", [(0, 2)], [0, 0], [0.5], id2label, {})


@pytest.mark.parametrize(
    "text, gold",
    [
        ("(John", (1, 5, "PERSON")),
        ("SSN:123-45-6789", (4, 15, "SSN")),
        ("mail john@x.com.", (5, 15, "EMAIL")),
        ("a\tjohn smith\nb", (2, 12, "PERSON")),
        ("🙂 John 🙂", (2, 6, "PERSON")),
        ("联系John电话", (2, 6, "PERSON")),
        ("é John é", (2, 6, "PERSON")),
    ],
)
def test_tokenizer_offsets_decode_to_exact_spans(tiny_tokenizer, text, gold):
    enc = tiny_tokenizer(text, return_offsets_mapping=True)
    offsets = [tuple(o) for o in enc["offset_mapping"]]
    tags = tags_for_spans(offsets, [gold])
    got = decode_entities(text, offsets, tags, [0.9] * len(tags), ID2LABEL, TIER_OF)
    assert [(e["start"], e["end"], e["type"]) for e in got] == [gold]
    assert got[0]["word"] == text[gold[0]:gold[1]]


CHECKED_LABELS = {0: "O", 1: "B-IP_ADDRESS", 2: "I-IP_ADDRESS", 3: "B-SSN", 4: "I-SSN", 5: "B-PHONE", 6: "I-PHONE"}


def _checked_middle_token(text, offsets, labels, ranked, **checks):
    """Three tokens, the middle one with the label ids `ranked` (most likely first), the others O, under a flat CRF:
    the best path tags the middle token with ranked[0]; returns the entities of `checked_window` on it."""
    import numpy as np

    from piiner.hub.crf_numba import crf_decode_cpu
    from piiner.hub.decoding_piiner import checked_window

    probs = np.full((3, len(labels)), 0.01)
    probs[[0, 2], 0] = 0.94
    probs[1, list(ranked)] = 0.6, 0.3, 0.04
    emissions = np.log(probs / probs.sum(-1, keepdims=True)).astype(np.float32)
    mask = np.ones(3, dtype=bool)
    crf = np.zeros(len(labels), np.float32), np.zeros((len(labels),) * 2, np.float32), np.zeros(len(labels), np.float32)
    tags, _ = crf_decode_cpu(emissions[None], mask[None], *crf)
    assert list(tags[0]) == [0, ranked[0], 0]
    tags, scores = checked_window(text, offsets, emissions, mask, crf, labels, **checks)
    return [(e["word"], e["type"]) for e in decode_entities(text, offsets, tags, scores, labels, {})]


@pytest.mark.parametrize("number, expected", [
    ("745.25.1139", "SSN"),  # three groups: no IP address, so the type the model ranks next
    ("10.0.0.1", "IP_ADDRESS"),  # an IP address stays one, and nothing is decoded again
    ("１０．０．０．１", "IP_ADDRESS"),  # written full width it is still one
    ("７４５．２５．１１３９", "SSN"),  # and full width, three groups are still none
])
def test_an_entity_that_fails_its_types_check_takes_the_next_best_type(number, expected):
    text = f"id {number} ok"
    offsets = [(0, 2), (3, 3 + len(number)), (4 + len(number), 6 + len(number))]
    # IP first, SSN second, phone third
    assert _checked_middle_token(text, offsets, CHECKED_LABELS, (1, 3, 5)) == [(number, expected)]


@pytest.mark.parametrize("written, expected", [
    ("10.0.0.5:443", "10.0.0.5"),  # the model's span holds the port: the address stays, the port lies outside
    ("[2001:db8::1]:8080", "2001:db8::1"),
    ("[::1]", "::1"),
    ("10.0.0.5", "10.0.0.5"),
    ("745.25.1139:80", None),  # no address before the port: nothing of it is one
])
def test_an_ip_address_written_with_its_port_keeps_the_address(written, expected):
    """An address with a port failed the IP check as a whole, so the model's find was dropped: "connection from
    10.0.0.5:443" gave no entity at all."""
    text = f"from {written} ok"
    offsets = [m.span() for m in re.finditer(r"\w+|[^\w\s]", text)]  # "10", ".", "0", ..., ":", "443"
    inside = len(offsets) - 2  # the model: one address over the whole written form, a new one ranked next on
    tags, runner_up = [0, 1] + [2] * (inside - 1) + [0], [1] * (inside + 2)  # each token (its B- label)
    found = _checked_tokens(text, offsets, tags, runner_up, labels=CHECKED_LABELS)
    assert found == ([(expected, "IP_ADDRESS")] if expected else [])


@pytest.mark.parametrize("written, expected", [
    ("16.0 8/22", [("8/22", "DATE")]),  # a lab value run on into the date: the date stays, the value lies outside
    ("40/500/10", []),  # no date in it: the type ranked next (here none)
    ("8/22", [("8/22", "DATE")]),
])
def test_a_date_in_numbers_must_be_one_a_calendar_has(written, expected):
    labels = {0: "O", 1: "B-DATE", 2: "I-DATE"}
    text = f"WBC {written} ok"
    offsets = [m.span() for m in re.finditer(r"\d+|[^\d\s]+", text)]  # "WBC", "16", ".", "0", "8", "/", "22", "ok"
    inside = len(offsets) - 2
    tags, runner_up = [0, 1] + [2] * (inside - 1) + [0], [1] * (inside + 2)  # a new date ranked next on each token
    assert _checked_tokens(text, offsets, tags, runner_up, labels=labels) == expected


@pytest.mark.parametrize("written, expected", [
    ("---301 944-5032", [("301 944-5032", "PHONE")]),  # "DAUGHTER-KRISSY---301 944-5032": the dashes lie outside
    ("301 944-5032", [("301 944-5032", "PHONE")]),
])
def test_a_phone_number_starts_at_its_first_digit(written, expected):
    labels = {0: "O", 1: "B-PHONE", 2: "I-PHONE"}
    text = f"KRISSY{written} ok"
    offsets = [m.span() for m in re.finditer(r"[A-Za-z]+|\d+|[^\w\s]", text)]  # "KRISSY", "-", "-", "-", "301", ...
    inside = len(offsets) - 2
    tags, runner_up = [0, 1] + [2] * (inside - 1) + [0], [1] * (inside + 2)  # a new number ranked next on each token
    assert _checked_tokens(text, offsets, tags, runner_up, labels=labels) == expected


def test_a_texts_windows_fold_its_full_width_forms_once(monkeypatch):
    """Each fold of a text that holds a full-width form copies the whole text: once per window made a long text's
    checks quadratic in its length."""
    import piiner.hub.decoding_piiner as decoding

    folds = []
    monkeypatch.setattr(decoding, "fold_width", lambda text, *args: folds.append(len(text)) or fold_width(text, *args))
    number = "７４５．２５．１１３９"
    text = f"id {number} ok " + "filler words " * 50  # a text no other test folds
    offsets = [(0, 2), (3, 3 + len(number)), (4 + len(number), 6 + len(number))]
    for _ in range(3):  # three windows of one text
        assert _checked_middle_token(text, offsets, CHECKED_LABELS, (1, 3, 5)) == [(number, "SSN")]
    assert folds == [len(text)]


@pytest.mark.parametrize("word, expected", [
    ("podiobooks.com", "URL"),  # a domain alone is no e-mail address: the type the model ranks next
    ("bob@podiobooks.com", "EMAIL"),
    ("ｂｏｂ＠ｐｏｄｉｏｂｏｏｋｓ．ｃｏｍ", "EMAIL"),  # its full-width at sign is one
])
def test_an_email_address_needs_an_at_sign(word, expected):
    labels = {0: "O", 1: "B-EMAIL", 2: "I-EMAIL", 3: "B-URL", 4: "I-URL", 5: "B-PHONE", 6: "I-PHONE"}
    text = f"at {word} now"
    offsets = [(0, 2), (3, 3 + len(word)), (4 + len(word), 7 + len(word))]
    # e-mail first, URL second, phone third
    assert _checked_middle_token(text, offsets, labels, (1, 3, 5)) == [(word, expected)]


@pytest.mark.parametrize("words, expected", [
    ("miramar florida", "LOCATION"),  # a place without a number, unit, box or postcode: the type ranked next
    ("12 Oak Street", "STREET_ADDRESS"),
    ("PO Box 8144", "STREET_ADDRESS"),
])
def test_a_street_address_needs_a_digit(words, expected):
    labels = {0: "O", 1: "B-STREET_ADDRESS", 2: "I-STREET_ADDRESS", 3: "B-LOCATION", 4: "I-LOCATION"}
    text = f"in {words} now"
    offsets = [(0, 2), (3, 3 + len(words)), (4 + len(words), 7 + len(words))]
    # street address first, place second, nothing third
    assert _checked_middle_token(text, offsets, labels, (1, 3, 0)) == [(words, expected)]


CASED_LABELS = {0: "O", 1: "B-ORGANIZATION", 2: "I-ORGANIZATION", 3: "B-LOCATION", 4: "I-LOCATION"}


@pytest.mark.parametrize("text, capitalised, kept", [
    ("We watched basketball today", ["ORGANIZATION"], False),  # mixed case, no capital: not an organization
    ("We watched Basketball today", ["ORGANIZATION"], True),
    ("we watched basketball today", ["ORGANIZATION"], True),  # chat written in lower case: case tells nothing
    ("WE WATCHED BASKETBALL TODAY", ["ORGANIZATION"], True),
    ("Hi There\n\nwe watched basketball today", ["ORGANIZATION"], True),  # its own paragraph is lower case
    ("We watched basketball today", [], True),  # the check turned off
])
def test_an_organization_without_a_capital_in_mixed_case_text_is_decoded_again_without_the_type(text, capitalised,
                                                                                                 kept):
    """The backbone is uncased: "basketball" and "Basketball" are one token to it. Where the paragraph writes
    capitals, a name of a type in `config.capitalised_types` without one fails its check like an unparsable IP
    address, and its window is decoded again without the type: here what the model ranks next, O."""
    start = text.lower().index("basketball")
    offsets = [(start - 8, start - 1), (start, start + 10), (start + 11, start + 16)]
    # organization first, nothing second, place third
    got = _checked_middle_token(text, offsets, CASED_LABELS, (1, 0, 3), capitalised_types=capitalised)
    assert got == ([(text[start:start + 10], "ORGANIZATION")] if kept else [])


def test_a_texts_paragraphs_are_read_once_however_many_names_are_checked(monkeypatch):
    """The case check asks, for every name in every window, whether its paragraph mixes upper and lower case: a
    long document with many names must not be read again from its start for each one (that made decoding grow with
    the square of the text: 17 ms per name on 200,000 characters)."""
    from piiner.hub import decoding_piiner

    calls = []
    monkeypatch.setattr(decoding_piiner, "paragraphs", lambda text: calls.append(1) or paragraphs(text))
    text = "We watched basketball on Monday.\n\nhere it is lower case: chess and golf.\n\n" * 40
    names = [{"type": "ORGANIZATION", "word": m.group(), "start": m.start(), "end": m.end()}
             for m in re.finditer(r"basketball|chess|golf", text)]
    failed = [decoding_piiner.fails_check(text, name, ["ORGANIZATION"]) for name in names]
    assert failed == [True, False, False] * 40  # each name judged by its own paragraph's case
    assert len(calls) == 1


@pytest.mark.parametrize("capitalised, expected", [
    (["ORGANIZATION"], [("basketball", "LOCATION")]),  # checked alone, the noun moves to the model's next name type
    (["PERSON", "LOCATION", "ORGANIZATION"], []),  # the default: no name type takes it
])
def test_a_lower_case_noun_rejected_as_one_name_type_does_not_come_back_as_another(capitalised, expected):
    text = "We watched basketball today"
    start = text.index("basketball")
    offsets = [(start - 8, start - 1), (start, start + 10), (start + 11, start + 16)]
    # organization first, place second, nothing third
    assert _checked_middle_token(text, offsets, CASED_LABELS, (1, 3, 0), capitalised_types=capitalised) == expected


def test_a_span_is_decoded_again_until_its_type_passes_however_many_types_fail_first():
    """Every entity the pipeline reports passes its type's check: a number the model ranks as an IP address, a
    card, then three name types (no capital in cased text) before an SSN comes out an SSN, not whatever the fourth
    decode left (the rounds were capped at four, the last unchecked)."""
    import numpy as np

    from piiner.hub.crf_numba import crf_decode_cpu
    from piiner.hub.decoding_piiner import checked_window

    kinds = ("IP_ADDRESS", "CREDIT_CARD", "ORGANIZATION", "LOCATION", "PERSON", "SSN")
    labels = {0: "O", **{1 + 2 * i + j: f"{bio}-{kind}" for i, kind in enumerate(kinds) for j, bio in enumerate("BI")}}
    text = "We saw 745.25.1139 today"
    offsets = [(0, 2), (3, 6), (7, 18), (19, 24)]
    probs = np.full((4, len(labels)), 0.001)
    probs[[0, 1, 3], 0] = 0.99
    probs[2, [1, 3, 5, 7, 9, 11, 0]] = 0.3, 0.2, 0.15, 0.12, 0.1, 0.08, 0.01  # the B- labels, best first; O last
    emissions = np.log(probs / probs.sum(-1, keepdims=True)).astype(np.float32)
    mask = np.ones(4, dtype=bool)
    crf = np.zeros(len(labels), np.float32), np.zeros((len(labels),) * 2, np.float32), np.zeros(len(labels), np.float32)
    tags, _ = crf_decode_cpu(emissions[None], mask[None], *crf)
    assert labels[int(tags[0][2])] == "B-IP_ADDRESS"
    tags, scores = checked_window(text, offsets, emissions, mask, crf, labels,
                                  capitalised_types=["PERSON", "LOCATION", "ORGANIZATION"])
    assert [(e["word"], e["type"]) for e in decode_entities(text, offsets, tags, scores, labels, {})] == [
        ("745.25.1139", "SSN")]


def _checked_tokens(text, offsets, tags, runner_up, labels=CASED_LABELS, **checks):
    """Tokens at `offsets`, decoded under a BIO-constrained flat CRF: each token's emission puts its label in `tags`
    first (0.6) and `runner_up` second (0.3); returns the entities of `checked_window` on them."""
    import numpy as np

    from piiner.hub.crf_numba import crf_decode_cpu
    from piiner.hub.crf_piiner import PiiNerCRF
    from piiner.hub.decoding_piiner import checked_window

    probs = np.full((len(offsets), len(labels)), 0.01)
    for i, (first, second) in enumerate(zip(tags, runner_up)):
        probs[i, first], probs[i, second] = 0.6, 0.3
    emissions = np.log(probs / probs.sum(-1, keepdims=True)).astype(np.float32)
    mask = np.ones(len(offsets), dtype=bool)
    crf = tuple(t.detach().numpy() for t in PiiNerCRF(labels).constrained_transitions())
    best, _ = crf_decode_cpu(emissions[None], mask[None], *crf)
    assert list(best[0]) == list(tags)
    tags, scores = checked_window(text, offsets, emissions, mask, crf, labels, **checks)
    return [(e["word"], e["type"]) for e in decode_entities(text, offsets, tags, scores, labels, {})]


def _checked_words(text, tags, runner_up, **checks):
    """`_checked_tokens` with one token per word of `text`."""
    import re

    return _checked_tokens(text, [m.span() for m in re.finditer(r"\S+", text)], tags, runner_up, **checks)


NAMES = ["PERSON", "LOCATION", "ORGANIZATION"]


@pytest.mark.parametrize("text, tags, runner_up, capitalised, expected", [
    # a place that runs into a lower-case word after it, or before it, ends at its capitalised words
    ("We met at Weehawken docks", (0, 0, 0, 3, 4), (1, 1, 1, 0, 0), NAMES, [("Weehawken", "LOCATION")]),
    ("It is in central Arizona now", (0, 0, 0, 3, 4, 0), (1, 1, 1, 0, 3, 1), NAMES, [("Arizona", "LOCATION")]),
    ("Go north of Broadway", (0, 3, 4, 4), (1, 0, 0, 3), NAMES, [("Broadway", "LOCATION")]),
    # a lower-case word inside a name stays, and lower-case text is left alone
    ("She studied at University of Ohio", (0, 0, 0, 1, 2, 2), (3, 3, 3, 0, 0, 0), NAMES,
     [("University of Ohio", "ORGANIZATION")]),
    ("we met at weehawken docks", (0, 0, 0, 3, 4), (1, 1, 1, 0, 0), NAMES, [("weehawken docks", "LOCATION")]),
    ("We met at Weehawken docks", (0, 0, 0, 3, 4), (1, 1, 1, 0, 0), [], [("Weehawken docks", "LOCATION")]),
])
def test_a_name_in_mixed_case_text_begins_and_ends_with_a_capitalised_word(text, tags, runner_up, capitalised,
                                                                        expected):
    """Uncased, the backbone reads "Weehawken docks" as it reads "Weehawken Docks". In a paragraph that writes
    capitals, a person, place or organization holding one does not begin or end with a word in lower case only:
    that word's tokens are decoded again without the type, and the name keeps its capitalised words."""
    assert _checked_words(text, tags, runner_up, capitalised_types=capitalised) == expected


UNBROKEN_LABELS = {0: "O", 1: "B-URL", 2: "I-URL", 3: "B-USERNAME", 4: "I-USERNAME", 5: "B-EMAIL", 6: "I-EMAIL",
                   7: "B-PERSON", 8: "I-PERSON"}


@pytest.mark.parametrize("text, tokens, tags, runner_up, expected", [
    # a URL run on over the handle after it ends at the space, the handle taking its next label; the URL's own
    # pieces, with no space between them, stay one URL
    ("via http://t.co/oh MileyCyrus now", ["via", "http", "://t.co/oh", "MileyCyrus", "now"], (0, 1, 2, 2, 0),
     (1, 0, 0, 3, 1), [("http://t.co/oh", "URL"), ("MileyCyrus", "USERNAME")]),
    # an e-mail address that swallowed the name before it gives the name back
    ("Daniel Smith dan@x.org", ["Daniel", "Smith", "dan@x.org"], (5, 6, 6), (7, 8, 5),
     [("Daniel Smith", "PERSON"), ("dan@x.org", "EMAIL")]),
    # a person's name holds spaces, as it may
    ("Daniel Smith wrote", ["Daniel", "Smith", "wrote"], (7, 8, 0), (5, 6, 1), [("Daniel Smith", "PERSON")]),
])
def test_urls_emails_and_usernames_never_run_over_a_space(text, tokens, tags, runner_up, expected):
    """URLs, e-mail and IP/MAC addresses, usernames and wallets hold no whitespace: an entity of one of those types
    that runs over a space is decoded again with its I- label forbidden on the tokens after the space."""
    offsets = [(text.index(token), text.index(token) + len(token)) for token in tokens]
    assert _checked_tokens(text, offsets, tags, runner_up, labels=UNBROKEN_LABELS) == expected


DIGIT_LABELS = {0: "O", 1: "B-CREDIT_CARD", 2: "I-CREDIT_CARD", 3: "B-SSN", 4: "I-SSN", 5: "B-DATE", 6: "I-DATE"}


@pytest.mark.parametrize("text, tags, runner_up, expected", [
    # a card run on into its expiry, the 19 digits passing Luhn by chance: the card ends before "exp", the expiry
    # takes its next label
    ("Card 3782-822463-10005 exp 09/27", (0, 1, 2, 2), (1, 3, 0, 5),
     [("3782-822463-10005", "CREDIT_CARD"), ("09/27", "DATE")]),
    # a field label swallowed by an SSN is given back
    ("SSN 078-05-1120 ok", (3, 4, 0), (0, 3, 1), [("078-05-1120", "SSN")]),
    # a card in groups holds no letter and stands as it is
    ("Card 4111 1111 1111 1111 now", (0, 1, 2, 2, 2, 0), (1, 0, 0, 0, 0, 1), [("4111 1111 1111 1111", "CREDIT_CARD")]),
    # written full width it still passes Luhn
    ("Card ４１１１ １１１１ １１１１ １１１１ now", (0, 1, 2, 2, 2, 0), (1, 0, 0, 0, 0, 1),
     [("４１１１ １１１１ １１１１ １１１１", "CREDIT_CARD")]),
])
def test_a_card_number_or_ssn_holds_no_letter(text, tags, runner_up, expected):
    """A card number and an SSN are digits and separators: a token with a letter in an entity of either type is
    decoded again without the type, even where the digits around it pass the type's checksum."""
    assert _checked_words(text, tags, runner_up, labels=DIGIT_LABELS) == expected


PHONE_LABELS = {0: "O", 1: "B-PHONE", 2: "I-PHONE", 3: "B-MEDICAL_RECORD", 4: "I-MEDICAL_RECORD"}


@pytest.mark.parametrize("text, tags, runner_up, expected", [
    # two numbers joined by "or" are two phone numbers, the second taking its next label (a B-) after the "or"
    ("Call 212-555-0147 or 212-555-0199 today", (0, 1, 2, 2, 0), (1, 0, 0, 1, 1),
     [("212-555-0147", "PHONE"), ("212-555-0199", "PHONE")]),
    # a line's letters between numbers, "(C)" and "(H)", lie outside them
    ("281.848.1619 (C) 713.306.7940 (H)", (1, 2, 2, 2), (0, 0, 1, 0), [("281.848.1619", "PHONE"), ("713.306.7940",
                                                                                                    "PHONE")]),
    # an extension marker and its digits stay in the number, as do letters written into it
    ("Office +1 (212) 555-0147 ext. 22", (0, 1, 2, 2, 2, 2), (1, 0, 0, 0, 0, 0), [("+1 (212) 555-0147 ext. 22",
                                                                                   "PHONE")]),
    ("Call 1-800-FLOWERS x304 now", (0, 1, 2, 0), (1, 0, 0, 1), [("1-800-FLOWERS x304", "PHONE")]),
    # a field label run into the number is given back
    ("Phone 617.555.0134", (1, 2), (0, 1), [("617.555.0134", "PHONE")]),
    # also at the start of a line: its word is its own, not the previous line's last word run into it
    ("Tel 212-555-0147\nFax 212-555-0199", (0, 1, 1, 2), (1, 0, 0, 1), [("212-555-0147", "PHONE"),
                                                                        ("212-555-0199", "PHONE")]),
])
def test_a_phone_number_holds_no_word_of_letters_but_an_extension_marker(text, tags, runner_up, expected):
    """A phone number is digits, separators and at most an extension marker ("ext. 22", "x304") or letters written
    into a digit word ("1-800-FLOWERS"): a token of a word of letters only in a PHONE entity ("or" between two
    numbers, a "(C)" for cell) is decoded again without the type, so two numbers on a line come out as two."""
    assert _checked_words(text, tags, runner_up, labels=PHONE_LABELS) == expected


def test_a_long_word_in_a_phone_number_is_tested_once_not_once_per_token(monkeypatch):
    """The word of each token in a PHONE entity is read whole to test it: once per word, so that a long run of
    characters without a space (a base64 blob) costs its length, not its length times its tokens."""
    import piiner.hub.decoding_piiner as decoding

    tested = []
    phone_word = decoding.DIGIT_TYPES["PHONE"]
    monkeypatch.setitem(decoding.DIGIT_TYPES, "PHONE", lambda word: tested.append(word) or phone_word(word))
    blob = "".join(f"{i % 10}q{i % 7}" for i in range(40))  # 40 tokens of digit, letter, digit
    text = f"Call {blob} now"
    offsets = [(0, 4)] + [(5 + 3 * i, 8 + 3 * i) for i in range(40)] + [(len(text) - 3, len(text))]
    tags = (0, 1) + (2,) * 39 + (0,)
    # letters written into a digit word, as in 1-800-FLOWERS, the word test allows; 80 digits are no phone number's
    # layout (TYPE_CHECKS), so the span is decoded again without the type
    assert _checked_tokens(text, offsets, tags, (1,) + (0,) * 40 + (1,), labels=PHONE_LABELS) == []
    assert tested == [blob]


@given(st.text(alphabet="a1- \n", max_size=40), st.lists(st.integers(0, 40), max_size=16))
@settings(max_examples=300, deadline=None)
def test_the_words_around_tokens_are_read_outward_from_each_token(text, cuts):
    from piiner.hub.decoding_piiner import _words_around

    cuts = sorted({c for c in cuts if c <= len(text)})
    pairs = [(s, e) for s, e in zip(cuts, cuts[1:])]  # consecutive tokens, spaces inside some
    first = [next(f for f in range(s, -1, -1) if f == 0 or text[f - 1].isspace()) for s, _ in pairs]
    last = [e + re.match(r"\S*", text[e:]).end() for _, e in pairs]
    assert _words_around(text, pairs, list(range(len(pairs)))) == list(zip(first, last))


def test_a_word_of_letters_leaves_a_phone_number_with_its_punctuation():
    """"(H)" tokenized as "(", "H", ")" lies outside the number whole: the ")" does not open the next number."""
    text = "281.848.1619 (H) 713.306.7940"
    tokens = ["281.848.1619", "(", "H", ")", "713.306.7940"]
    offsets = [(text.index(token), text.index(token) + len(token)) for token in tokens]
    assert _checked_tokens(text, offsets, (1, 2, 2, 2, 2), (0, 0, 0, 1, 1), labels=PHONE_LABELS) == [
        ("281.848.1619", "PHONE"), ("713.306.7940", "PHONE")]

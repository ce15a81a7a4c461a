"""The piiner token-classification pipeline: exact offsets, batching, long texts, labels from the config, and
loading a saved snapshot with `pipeline(..., trust_remote_code=True)` in a fresh process."""

import json
import subprocess
import sys
import textwrap

import pytest
import torch
from transformers.utils import ModelOutput

from conftest import TINY_VOCAB, OverflowStopsEarly, build_tiny_tokenizer, env_without_this_repo, tiny_bert_config
from piiner.hub.configuration_piiner import PiiNerConfig
from piiner.hub.modeling_piiner import PiiNerForTokenClassification
from piiner.hub.pipeline_piiner import PiiNerTokenClassificationPipeline
from piiner.hub.encoding_piiner import WindowCoverageError, encode_texts

JOHN, SMITH = TINY_VOCAB.index("john"), TINY_VOCAB.index("smith")


def tiny_model(seed=0, **config_overrides):
    torch.manual_seed(seed)
    return PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_bert_config(), **config_overrides))


def make_pipeline(model, **kwargs):
    return PiiNerTokenClassificationPipeline(model=model, tokenizer=build_tiny_tokenizer(), device=-1, **kwargs)


def test_a_tokenizer_that_cuts_windows_short_is_refused_when_the_pipeline_is_made(model):
    """tokenizers 0.23.1-0.23.2 (huggingface/tokenizers#2091) would leave the rest of every long text unread: a
    server or a corpus job stops at load, not at its first long text."""
    with pytest.raises(WindowCoverageError, match="tokenizers#2091"):
        PiiNerTokenClassificationPipeline(model=model, tokenizer=OverflowStopsEarly(build_tiny_tokenizer()), device=-1)


def test_a_pipeline_without_a_tokenizer_is_refused_naming_what_is_missing(model):
    with pytest.raises(ValueError, match="no tokenizer: piiner needs its model's fast tokenizer"):
        PiiNerTokenClassificationPipeline(model=model, tokenizer=None, device=-1)


def rule_forward(model, edge_blind=0, john_score=0.9, smith_score=0.8):
    """A forward that tags "john" B-PERSON and a following "smith" I-PERSON, deterministically.

    Its emissions give the tag `john_score` (a "john" followed by "smith": 1.0) or `smith_score` and the rest to
    "O", and its CRF's scores are zero, so the pipeline's decode scores each token by exactly that. With
    `edge_blind=k` the first and last k real tokens of every window are tagged "O", like a model that lacks context
    at a window edge: only a merge that trusts central predictions reports each entity whole.
    """
    label2id = model.config.label2id
    begin, inside, outside = label2id["B-PERSON"], label2id["I-PERSON"], label2id["O"]
    with torch.no_grad():
        for scores in (model.crf.start_transitions, model.crf.transitions, model.crf.end_transitions):
            scores.zero_()
    calls = []

    def forward(input_ids, attention_mask=None, token_type_ids=None, char_ids=None, **kwargs):
        calls.append(tuple(input_ids.shape))
        real = attention_mask.bool() & char_ids.ne(0).any(-1)
        tags = torch.full_like(input_ids, outside)
        scores = torch.ones(input_ids.shape)
        after_john, before_smith = torch.zeros_like(real), torch.zeros_like(real)
        after_john[:, 1:] = input_ids[:, :-1] == JOHN
        before_smith[:, :-1] = input_ids[:, 1:] == SMITH
        john = input_ids == JOHN
        tags[john], scores[john] = begin, john_score
        scores[john & before_smith] = 1.0  # (O, I-PERSON) is no path: a "john" that may be O would move the marginals
        smith = (input_ids == SMITH) & after_john
        tags[smith], scores[smith] = inside, smith_score
        if edge_blind:
            rank = real.long().cumsum(-1)
            from_end = real.sum(-1, keepdim=True) - rank
            edge = real & ((rank <= edge_blind) | (from_end < edge_blind))
            tags[edge], scores[edge] = outside, 1.0
        probabilities = torch.zeros(*input_ids.shape, len(label2id))
        probabilities[..., outside] = 1 - scores
        probabilities.scatter_(-1, tags.unsqueeze(-1), scores.unsqueeze(-1))
        return ModelOutput(logits=probabilities.clamp(min=1e-12).log())

    model.forward = forward
    return calls


@pytest.fixture(scope="module")
def model():
    return tiny_model()


@pytest.fixture
def rule_pipeline():
    m = tiny_model(seed=1)
    calls = rule_forward(m)
    return make_pipeline(m), calls


def spans(entities):
    return [(e["start"], e["end"], e["type"], e["word"]) for e in entities]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("(John", [(1, 5, "PERSON", "John", 0.9)]),
        ("call me: (John Smith).", [(10, 20, "PERSON", "John Smith", 0.8)]),
        ("mail john@x.com.", [(5, 15, "EMAIL", "john@x.com", 1.0)]),  # the e-mail recognizer outranks the rule model
        ("a\tJohn Smith\tb", [(2, 12, "PERSON", "John Smith", 0.8)]),
        ("a\tJohn\nSmith\tb", [(2, 6, "PERSON", "John", 1.0), (7, 12, "PERSON", "Smith", 0.8)]),  # ends at a line break
        ("🙂 John 🙂", [(2, 6, "PERSON", "John", 0.9)]),
        ("联系John电话", [(2, 6, "PERSON", "John", 0.9)]),
        # cased at both ends, as a name in cased text is
        ("Ünïcode JOHN  SMITH!", [(8, 19, "PERSON", "JOHN  SMITH", 0.8)]),
        ("", []),
        (" \n\t ", []),
    ],
)
def test_entities_carry_exact_offsets_type_and_tier(rule_pipeline, text, expected):
    """The score of an entity is the least CRF marginal of its tokens (the rule model's); a recognizer's match scores
    what the recognizer says (1.0 an e-mail)."""
    pipe, _ = rule_pipeline
    entities = pipe(text)
    assert spans(entities) == [entity[:4] for entity in expected]
    for e in entities:
        assert text[e["start"]:e["end"]] == e["word"]
        assert e["entity_group"] == e["type"] and e["tier"] == 2
    assert [e["score"] for e in entities] == pytest.approx([entity[4] for entity in expected])


def test_aggregation_none_gives_per_token_labels(rule_pipeline):
    pipe, _ = rule_pipeline
    tokens = pipe("hi (John Smith)", aggregation_strategy="none")
    assert [(t["entity"], t["start"], t["end"], t["word"]) for t in tokens] == [
        ("B-PERSON", 4, 8, "John"), ("I-PERSON", 9, 14, "Smith"),
    ]
    assert [t["score"] for t in tokens] == pytest.approx([1.0, 0.8]) and tokens[1]["tier"] == 2


def test_min_score_overall_and_per_tier(rule_pipeline):
    pipe, _ = rule_pipeline
    text = "John Smith and John"  # entity scores 0.8 (min over tokens) and 0.9
    assert len(pipe(text)) == 2
    assert spans(pipe(text, min_score=0.85)) == [(15, 19, "PERSON", "John")]
    assert pipe(text, min_score={2: 0.95}) == []
    assert len(pipe(text, min_score={1: 0.95})) == 2
    # a type's own threshold comes before its tier's (Presidio's per-entity thresholds)
    assert spans(pipe(text, min_score={2: 0.95, "PERSON": 0.85})) == [(15, 19, "PERSON", "John")]


@pytest.mark.parametrize("min_score, message", [
    ({"1": 0.5}, "min_score has the key '1'"), ({5: 0.1}, "min_score has the key 5"), (1.5, "got 1.5"),
    (-1, "got -1"), (float("nan"), "got nan"), ({"PERSON": 2}, r"min_score\['PERSON'\] must be a score"),
    ({True: 0.5}, "min_score has the key True"), ({"PERSN": 0.5}, "min_score has the key 'PERSN'"),
])
def test_a_bad_min_score_is_an_error_naming_the_value(rule_pipeline, min_score, message):
    pipe, _ = rule_pipeline
    with pytest.raises(ValueError, match=message):
        pipe("John Smith", min_score=min_score)


def test_ignore_labels_drops_types_and_refuses_labels(rule_pipeline):
    pipe, _ = rule_pipeline
    text = "John Smith and John"
    assert pipe(text, ignore_labels=["PERSON"]) == [] and len(pipe(text, ignore_labels=["EMAIL", "O"])) == 2
    with pytest.raises(ValueError, match="ignore_labels names the label 'B-SSN'; it takes types, such as 'SSN'"):
        pipe(text, ignore_labels=["B-SSN"])
    with pytest.raises(ValueError, match=r"ignore_labels names \['PERSN'\], which are not types of this model"):
        pipe(text, ignore_labels=["PERSN"])
    with pytest.raises(TypeError, match="ignore_labels must be a list"):
        pipe(text, ignore_labels="PERSON")


def test_labels_and_tiers_come_from_the_model_config():
    # A checkpoint with another label set must decode its own types (the reference used a global list).
    id2label = {0: "O", 1: "B-ZIP", 2: "I-ZIP", 3: "B-PERSON", 4: "I-PERSON"}
    m = tiny_model()
    # Set after construction: PiiNerConfig(id2label=...) currently replaces a custom label set by the default one.
    m.config.id2label, m.config.label2id = id2label, {v: k for k, v in id2label.items()}
    m.config.type_to_tier = {"ZIP": 7, "PERSON": 2}
    rule_forward(m)  # tags john with label2id["B-PERSON"] == 3
    pipe = make_pipeline(m)
    assert [(e["type"], e["tier"]) for e in pipe("John")] == [("PERSON", 2)]
    m.config.id2label = {**id2label, 3: "B-ZIP"}
    assert [(e["type"], e["tier"]) for e in pipe("John")] == [("ZIP", 7)]


def test_list_input_is_batched_and_equals_one_by_one(model):
    pipe = make_pipeline(model)
    texts = ["Call John Smith at john@x.com", "", "SSN:123-45-6789 " * 6, "(John)\tand\nme"]
    one_by_one = [pipe(t) for t in texts]
    batched = pipe(texts, batch_size=3)
    assert [spans(r) for r in batched] == [spans(r) for r in one_by_one]
    assert any(one_by_one), "a random model tags something"
    for got, want in zip(batched, one_by_one):
        assert [e["score"] for e in got] == pytest.approx([e["score"] for e in want], abs=1e-5)
    for text, result in zip(texts, batched):
        assert all(text[e["start"]:e["end"]] == e["word"] for e in result)


def test_texts_of_similar_length_share_a_batch_and_answers_keep_input_order(rule_pipeline):
    """A batch is padded to its longest window: a list of long and short texts in turn is run shortest first, so
    no short text is padded to a long one's length, and each answer still comes back at its text's place."""
    pipe, calls = rule_pipeline
    long_text, short_text = "me and John Smith " * 8, "John"
    texts = [long_text, short_text, long_text + "John", short_text + " Smith"]
    one_by_one = [spans(pipe(t)) for t in texts]
    calls.clear()
    assert [spans(r) for r in pipe(texts, batch_size=2)] == one_by_one
    widths = sorted(shape[1] for shape in calls)
    assert len(calls) == 2 and widths[0] < 6 < widths[1], calls  # the two short texts together, then the two long


def test_a_paragraph_is_tagged_as_it_is_alone_whatever_stands_before_it(model):
    """Text the model never saw beside a paragraph (the message before it in a thread) does not change what is found
    in it: each paragraph is encoded on its own."""
    pipe = make_pipeline(model)
    first, second = "Call John Smith at john@x.com", "SSN:123-45-6789 for Ann Lee (john)"
    together = pipe(f"{first}\n \n{second}")
    shift = len(first) + 3
    alone = [{**e, "start": e["start"] + shift, "end": e["end"] + shift} for e in pipe(second)]
    tail = [e for e in together if e["start"] >= shift]
    assert alone and [spans([e]) for e in tail] == [spans([e]) for e in alone]
    assert [e["score"] for e in tail] == pytest.approx([e["score"] for e in alone], abs=1e-5)


def test_fifty_thousand_characters_every_entity_once_and_whole():
    m = tiny_model(seed=2)
    rule_forward(m, edge_blind=3)
    pipe = make_pipeline(m)
    filler = ["call", "me", "at", "the", "and", "is", "my"]
    words, expected, position = [], [], 0
    i = 0
    while position < 50_000:
        if i % 13 == 5:
            word = "John Smith"
            expected.append((position, position + len(word), "PERSON", word))
        else:
            word = filler[i % len(filler)]
        words.append(word)
        position += len(word) + 1
        i += 1
    text = " ".join(words + filler)  # the edge-blind model cannot see the text's first and last tokens
    assert len(text) >= 50_000

    # The test means something only if entities sit on window boundaries: check some window cuts one.
    windows = encode_texts(pipe.tokenizer, text, m.config)["offset_mapping"].tolist()
    cut = {
        (s, e) for s, e, _, _ in expected
        for window in windows
        for last_start, last_end in [max(o for o in window if o[1] > o[0])]
        if s <= last_start < e and last_end < e
    }
    assert cut, "no entity straddles a window boundary"

    assert spans(pipe(text, batch_size=4)) == expected


def test_window_length_and_stride_parameters(rule_pipeline):
    pipe, calls = rule_pipeline
    text = " ".join(["me John Smith"] * 30)
    expected = spans(pipe(text))
    calls.clear()
    assert spans(pipe(text, max_length=16, stride=4)) == expected
    assert max(shape[1] for shape in calls) == 16 and len(calls) > 5
    with pytest.raises(ValueError, match="stride"):
        pipe(text, max_length=16, stride=14)


@pytest.mark.parametrize("bad, name", [(None, "NoneType"), (b"John", "bytes"), (3, "int"), (["ok", 4], "int")])
def test_bad_inputs_raise_type_errors_naming_them(rule_pipeline, bad, name):
    pipe, _ = rule_pipeline
    with pytest.raises(TypeError, match=name):
        pipe(bad)


def test_empty_list_and_unknown_options(rule_pipeline):
    pipe, _ = rule_pipeline
    assert pipe([]) == []
    assert [spans(r) for r in pipe(("John", "x"))] == [[(0, 4, "PERSON", "John")], []]
    with pytest.raises(ValueError, match="aggregation_strategy"):
        pipe("John", aggregation_strategy="first")
    with pytest.raises(TypeError):
        pipe("John", ignore_label=["O"])  # a misspelt option


def test_a_model_in_training_mode_is_an_error_not_noise(model):
    pipe = make_pipeline(model)
    model.train()
    try:
        with pytest.raises(ValueError, match="eval mode"):
            pipe("John")
    finally:
        model.eval()


def test_snapshot_loads_with_pipeline_in_a_fresh_process(tmp_path):
    # Bias the emissions towards B-DATE_OF_BIRTH (a type with no check on its text) so the random model tags every
    # token: deterministic, non-empty output.
    m = tiny_model(seed=3)
    with torch.no_grad():
        m.classifier.bias[m.config.label2id["B-DATE_OF_BIRTH"]] += 50.0
    snapshot = tmp_path / "snapshot"
    m.save_pretrained(snapshot)
    build_tiny_tokenizer().save_pretrained(snapshot)
    texts = ["Mail (John) at john@x.com.\tThanks", "联系 John 🙂"]
    expected = make_pipeline(m)(texts)

    script = textwrap.dedent(
        """
        import json, sys
        sys.modules["piiner"] = None  # the installed package is not reachable: only the snapshot's own files
        from transformers import pipeline
        pipe = pipeline("token-classification", model=sys.argv[1], trust_remote_code=True, device=-1)
        texts = json.loads(sys.argv[2])
        print(json.dumps({"class": type(pipe).__module__ + "." + type(pipe).__name__, "results": pipe(texts)}))
        """
    )
    env = env_without_this_repo(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf_home"), TOKENIZERS_PARALLELISM="false")
    work_dir = tmp_path / "elsewhere"
    work_dir.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", script, str(snapshot), json.dumps(texts)],
        cwd=work_dir, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["class"].endswith("pipeline_piiner.PiiNerTokenClassificationPipeline")
    assert not out["class"].startswith("piiner."), "the pipeline must come from the snapshot, not the repo"
    got = out["results"]
    assert [spans(r) for r in got] == [spans(r) for r in expected]
    assert all(r for r in got)
    for text, result in zip(texts, got):
        for e in result:
            # the built-in e-mail recognizer travels with the snapshot (recognizers_piiner.py) and outranks the model
            kind = "EMAIL" if "@" in e["word"] else "DATE_OF_BIRTH"
            assert text[e["start"]:e["end"]] == e["word"] and e["type"] == kind and e["tier"] == 2


# -- what the stock pipeline accepts, this one accepts ----------------------------------------------------------------

INPUT_TEXTS = ["call john smith", "mail jo@ex.com now", "nothing here"]


def test_every_input_form_of_the_stock_pipeline_gives_the_same_entities():
    import datasets
    import numpy as np
    from transformers.pipelines.pt_utils import KeyDataset

    pipe = make_pipeline(tiny_model(seed=3))
    expected = pipe(list(INPUT_TEXTS))
    assert len(expected) == 3
    table = datasets.Dataset.from_dict({"text": INPUT_TEXTS})

    class Texts(torch.utils.data.Dataset):
        def __len__(self):
            return len(INPUT_TEXTS)

        def __getitem__(self, i):
            return INPUT_TEXTS[i]

    as_lists = {"tuple": tuple(INPUT_TEXTS), "numpy": np.array(INPUT_TEXTS), "column": table["text"]}
    for name, inputs in as_lists.items():
        assert pipe(inputs) == expected, name
    streams = {"KeyDataset": KeyDataset(table, "text"), "torch Dataset": Texts(), "iterator": iter(INPUT_TEXTS),
               "generator": (t for t in INPUT_TEXTS)}
    for name, inputs in streams.items():
        assert list(pipe(inputs)) == expected, name
    assert pipe(np.array(INPUT_TEXTS)[0]) == expected[0]
    with pytest.raises(TypeError, match="inputs\\[1\\] must be a str"):
        pipe(["text", 5])


def test_lone_surrogates_and_a_too_long_window_are_handled_not_crashed():
    pipe = make_pipeline(tiny_model(seed=3))
    text = "mail \ud800 jo@ex.com \udfff"
    entities = pipe(text)
    assert entities and all(text[e["start"]:e["end"]] == e["word"] for e in entities)
    with pytest.raises(ValueError, match="longer than the encoder's 128 positions"):
        pipe("john " * 300, max_length=1000)


def test_pipeline_for_a_loaded_model_and_the_ner_alias_is_piiners(tmp_path):
    from transformers import BertForTokenClassification, TokenClassificationPipeline, pipeline

    model = tiny_model(seed=3).eval()
    tokenizer = build_tiny_tokenizer()
    expected = make_pipeline(model)(INPUT_TEXTS)
    for task in ("token-classification", "ner"):
        pipe = pipeline(task, model=model, tokenizer=tokenizer)
        assert isinstance(pipe, PiiNerTokenClassificationPipeline) and pipe(INPUT_TEXTS) == expected
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    from_snapshot = pipeline("ner", model=str(tmp_path), trust_remote_code=True)  # the snapshot's own copy of the class
    assert type(from_snapshot).__name__ == "PiiNerTokenClassificationPipeline"
    # Any other model still gets the stock pipeline.
    stock = pipeline("token-classification", model=BertForTokenClassification(tiny_bert_config()), tokenizer=tokenizer)
    assert isinstance(stock, TokenClassificationPipeline) and not isinstance(stock, PiiNerTokenClassificationPipeline)


def test_the_pipeline_gives_an_entity_that_fails_its_types_check_the_next_best_type():
    # The model's best path types "john" as an IP address, which "John" cannot be; its next best type is a person.
    model = tiny_model()
    label2id = model.config.label2id

    def forward(input_ids, attention_mask=None, token_type_ids=None, char_ids=None, **kwargs):
        logits = torch.zeros(*input_ids.shape, len(label2id))
        logits[..., label2id["O"]] = 5.0
        john = input_ids == JOHN
        logits[john, label2id["B-IP_ADDRESS"]] = 9.0
        logits[john, label2id["B-PERSON"]] = 8.0
        return ModelOutput(logits=logits)

    model.forward = forward
    (entity,) = make_pipeline(model)("call John now")
    assert (entity["word"], entity["type"]) == ("John", "PERSON")


def test_char_ids_reach_the_model_on_the_device_of_the_token_ids(model):
    """The base pipeline moves the token ids to the pipeline's device before `_forward`, which builds the char ids
    from NumPy: they must follow (on CUDA the model failed with "found at least two devices" here)."""
    finder = make_pipeline(model)
    window = next(finder.preprocess("call john smith"))
    window = {k: v.to("meta") if torch.is_tensor(v) else v for k, v in window.items()}  # a device other than the CPU
    devices = {}

    class Recorder:
        training = False

        def __call__(self, **inputs):
            devices.update({k: v.device.type for k, v in inputs.items() if torch.is_tensor(v)})
            raise StopIteration

    finder.model = Recorder()
    with pytest.raises(StopIteration):
        finder._forward(window)
    assert devices == {"input_ids": "meta", "attention_mask": "meta", "char_ids": "meta"}

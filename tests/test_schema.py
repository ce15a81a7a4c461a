import json

from piiner.hub.configuration_piiner import PiiNerConfig
from piiner.hub.pii_schema import LABELS, PII_TYPES, TIER_OF, TIER_TYPES, split_label

from conftest import tiny_bert_config


def test_schema_has_41_types_in_4_tiers_and_83_bio_labels():
    assert len(PII_TYPES) == 41
    assert sorted(TIER_TYPES) == [1, 2, 3, 4]
    assert [len(TIER_TYPES[t]) for t in (1, 2, 3, 4)] == [6, 6, 11, 18]
    assert len(LABELS) == 83 and LABELS[0] == "O"
    for i, pii_type in enumerate(PII_TYPES):
        assert LABELS[1 + 2 * i] == f"B-{pii_type}" and LABELS[2 + 2 * i] == f"I-{pii_type}"
    assert TIER_OF["SSN"] == 1 and TIER_OF["PERSON"] == 2 and TIER_OF["DATE"] == 3 and TIER_OF["IBAN"] == 4


def test_split_label_rejects_non_bio_labels():
    assert split_label("B-EMAIL") == ("B", "EMAIL") and split_label("O") == ("O", None)
    import pytest

    with pytest.raises(ValueError, match="not a BIO label"):
        split_label("EMAIL")


def test_config_labels_and_tiers_round_trip_through_json(tmp_path):
    config = PiiNerConfig(encoder_config=tiny_bert_config())
    assert config.num_labels == 83 and config.id2label[1] == "B-SSN"
    config.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "piiner" and saved["encoder_config"]["hidden_size"] == 32
    loaded = PiiNerConfig.from_pretrained(tmp_path)
    assert loaded.id2label == config.id2label and loaded.label2id == config.label2id
    assert all(isinstance(k, int) for k in loaded.id2label)
    assert loaded.type_to_tier == TIER_OF
    assert loaded.encoder_config.to_dict() == config.encoder_config.to_dict()


def test_config_refuses_a_label_without_a_tier():
    import pytest

    with pytest.raises(ValueError, match="no tier"):
        PiiNerConfig(encoder_config=tiny_bert_config(), id2label={0: "O", 1: "B-ALIEN", 2: "I-ALIEN"},
                     type_to_tier={"SSN": 1})


def test_config_keeps_a_custom_label_set_through_save_and_load(tmp_path):
    id2label = {0: "O", 1: "B-EMAIL", 2: "I-EMAIL", 3: "B-SSN", 4: "I-SSN"}
    config = PiiNerConfig(encoder_config=tiny_bert_config(), id2label=id2label, type_to_tier={"EMAIL": 2, "SSN": 1})
    assert config.num_labels == 5 and config.id2label == id2label
    config.save_pretrained(tmp_path)
    loaded = PiiNerConfig.from_pretrained(tmp_path)
    assert loaded.id2label == id2label and loaded.label2id == {v: k for k, v in id2label.items()}
    assert loaded.type_to_tier == {"EMAIL": 2, "SSN": 1}


def test_every_type_the_decode_has_a_rule_for_is_a_type_of_the_schema():
    # A rule keyed by a name the schema lacks ("MAC_ADDRESS" for DEVICE_ID) never applies, silently.
    from piiner.hub.decoding_piiner import DIGIT_TYPES, TYPE_CHECKS, TYPE_PARTS, UNBROKEN_TYPES
    from piiner.hub.pii_schema import PII_TYPES

    for table in (TYPE_CHECKS, TYPE_PARTS, DIGIT_TYPES, UNBROKEN_TYPES):
        assert set(table) <= set(PII_TYPES), set(table) - set(PII_TYPES)

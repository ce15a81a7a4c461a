"""The NAME=VALUE settings every command line reads (piiner/options.py)."""

import pytest

from piiner.options import comma_pairs, name_value_pairs


def test_pairs_are_split_once_and_stripped_in_order():
    assert name_value_pairs([" b = x=y ", "a=1"], "--opt") == {"b": "x=y", "a": "1"}
    assert name_value_pairs(["a=b=c.json"], "--report", split_at_last=True) == {"a=b": "c.json"}
    assert comma_pairs("p=3, ,q=2", "source_repeats") == {"p": "3", "q": "2"}
    assert comma_pairs(None, "x") == {} and name_value_pairs([], "x") == {}


@pytest.mark.parametrize("items, allow_empty, message", [
    (["a"], False, "--opt takes NAME=VALUE, got 'a'"),
    (["=1"], False, "--opt takes NAME=VALUE, got '=1'"),
    (["a="], False, "--opt takes NAME=VALUE, got 'a='"),
    (["a=1", " a =2"], False, "--opt names 'a' twice ('1' and '2')"),
    (["a=", "a=X"], True, "--opt names 'a' twice"),
])
def test_a_malformed_item_or_a_name_given_twice_is_an_error_naming_it(items, allow_empty, message):
    with pytest.raises(ValueError) as error:
        name_value_pairs(items, "--opt", allow_empty=allow_empty)
    assert message in str(error.value)


def test_an_empty_value_is_kept_where_allowed():
    assert name_value_pairs(["a="], "--opt", allow_empty=True) == {"a": ""}


def test_a_yaml_or_json_file_that_does_not_parse_is_one_error_naming_it(tmp_path):
    # A YAML syntax error is no ValueError: read bare, it escaped the commands' error handling as a traceback.
    from piiner.options import load_data_file

    bad = tmp_path / "labels.yaml"
    bad.write_text("Name: [PERSON\n")
    with pytest.raises(ValueError, match=f"label map {bad}: "):
        load_data_file(str(bad), "label map")
    good = tmp_path / "labels.json"
    good.write_text('{"Name": "PERSON"}')
    assert load_data_file(str(good), "label map") == {"Name": "PERSON"}

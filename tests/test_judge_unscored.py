"""experiments/judge_unscored.py counts verdicts on the spans the reports call unscored, and no others."""

import json
import subprocess
import sys

from conftest import REPO_ROOT


def test_count_leaves_out_verdicts_on_types_the_text_labels(tmp_path):
    # BTC labels links and handles by pattern: a URL found in a tweet is judged by its gold, so a verdict on it is
    # not one on an unscored span; a NATIONALITY there is.
    gold = tmp_path / "gold.jsonl"
    rows = [{"id": "t1", "source": "btc", "text": "Irish fans at http://t.co/x", "spans": [],
             "labelled_types": ["EMAIL", "LOCATION", "ORGANIZATION", "PERSON", "URL", "USERNAME"]}]
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    judged = tmp_path / "judged.tsv"
    judged.write_text("number\tside\tsource\tid\tstart\tend\ttype\tverdict\n"
                      "0\temitted\tbtc\tt1\t0\t5\tNATIONALITY\tW\n"
                      "1\temitted\tbtc\tt1\t14\t27\tURL\tR\n")
    out = subprocess.run([sys.executable, "experiments/judge_unscored.py", "count", str(judged), "--data", str(gold)],
                         cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    assert "left out: 1 verdicts on spans their text's gold labels (URL 1)" in out
    assert "| emitted | 1 | 0 | 0% |" in out

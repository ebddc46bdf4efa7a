# Shortcuts for ./run.sh, which holds the set-up (and works where make is not installed).
.PHONY: run test setup clean-artifacts
run:
	./run.sh run
test:
	./run.sh test
setup:
	./run.sh setup
clean-artifacts:
	rm -rf data models results logs .snakemake

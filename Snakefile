# poeval: table of contents of the workflow. Config: params.yaml (validated in workflow/rules/common.smk);
# the rules live in workflow/rules/, the report captions in workflow/report/.
from snakemake.utils import min_version

min_version("9.0")

# Every rule's shell: bash's strict mode (Snakemake's own prefix, which this one replaces) and no stdin. A
# rule never reads the terminal or pipe that Snakemake was started from: a library's yes/no question
# (transformers asks whether to run a model folder's own code) would take its answer from it.
shell.prefix("set -euo pipefail; exec </dev/null; ")


configfile: "params.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/sample.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/tables.smk"
if BPOMP_ENABLED:   # the BPoMP rules exist only when bpomp.enabled

    include: "workflow/rules/bpomp.smk"


include: "workflow/rules/adherence.smk"
include: "workflow/rules/similarity.smk"


rule all:
    input:
        all_targets(),
        bpomp_targets(),
        adherence_targets(),
        similarity_targets(),

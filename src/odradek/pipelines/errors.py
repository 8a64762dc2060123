"""Why a pipeline run could not go on, said in one line by `odradek pipeline` (exit code 1)."""


class PipelineError(Exception):
    """The run cannot go on: the broker cannot be reached, the checkpoint is not this stream's, a query
    failed."""

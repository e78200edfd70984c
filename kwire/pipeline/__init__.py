"""Consumer-group traffic analysis: capture sources, then Spark stages, then a report.

The flow, one private module a stage:

- sources write captures in one Arrow schema (``_capture``): the recording
  proxy (``_record``), a pcap importer (``_pcap``) and a generator of
  synthetic groups (``_synth``);
- ``_decode`` hands capture batches to the codec's batch decoder
  (``kwire.codec._batch_c`` / ``_batch_py``);
- ``_analysis`` rebuilds each group's timeline, rebalances and what-if
  replays from decoded frames; ``_spark_stages`` runs decode and analysis as
  Spark stages and renders the report.

Needs the ``pipeline`` extra (pyarrow, pyspark, dpkt); ``kwire`` itself does
not import this package.  See docs/PIPELINE.md.  This module only re-exports.
"""

from kwire.pipeline._capture import BROKER_TO_CLIENT, CLIENT_TO_BROKER, CaptureWriter, read_capture
from kwire.pipeline._decode import decode_capture, decode_table
from kwire.pipeline._spark_stages import CaptureError, run_pipeline, spark_session
from kwire.pipeline._synth import synth

__all__ = [
    "BROKER_TO_CLIENT", "CLIENT_TO_BROKER", "CaptureWriter", "read_capture",
    "decode_capture", "decode_table",
    "CaptureError", "run_pipeline", "spark_session",
    "synth",
]

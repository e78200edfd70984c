"""Consumer-group traffic analysis: capture sources, then Spark stages, then a report.

The flow, one private module a stage:

- sources write captures in one Arrow schema (``_capture``): the recording
  proxy (``_record``), a pcap importer (``_pcap``) and generators of
  synthetic groups (``_synth`` classic; ``_synth_fleet`` KIP-848 and mixed
  groups through kwire.group's state machines, ``_synth_consumer``);
- ``_decode`` hands capture batches to the codec's batch decoder
  (``kwire.codec._batch_c`` / ``_batch_py``);
- the analysis reads decoded frames as events (``_events``, topic sizes from
  Metadata in ``_metadata``), rebuilds each group's timeline (``_timeline``)
  and its rebalances (``_rebalances``), and replays its generations under
  every assignor (the what-if: ``_whatif_pack``, then ``_whatif_batch``);
- ``_spark_stages`` runs decode and analysis as Spark stages and renders the
  report (``_report``).

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

"""Consumer-group traffic analysis: captures, generators, recorders and the Spark pipeline.

Needs the ``pipeline`` extra (pyarrow, pyspark, dpkt); ``kwire`` itself does
not import this package.  See docs/PIPELINE.md.
"""

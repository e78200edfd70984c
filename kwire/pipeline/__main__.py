"""The pipeline as a script, for ``spark-submit``:

    spark-submit --master M "$(python -c 'import kwire.pipeline.__main__ as m; print(m.__file__)')" \\
        CAPTURE --out DIR

runs ``kwire pipeline CAPTURE --out DIR`` (same arguments) on the session
spark-submit configured; ``python -m kwire.pipeline`` works too.
"""

import sys

from kwire.__main__ import main

if __name__ == "__main__":
    sys.exit(main(["pipeline", *sys.argv[1:]]))

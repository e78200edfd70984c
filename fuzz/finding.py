"""What every oracle of the fuzz harness raises.

Its own module so that the oracles (``differential``, ``batch_oracle``)
import it without importing each other: ``differential`` dispatches to
``batch_oracle``, and ``batch_oracle`` must not import it back.
"""


class Finding(AssertionError):
    """A real problem: the implementations disagree, or a decoder misbehaved."""

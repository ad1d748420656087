"""Property tests: `BertTokenizer`, `PlainBertTokenizer` and the reference
give the same ids on arbitrary Unicode text, arbitrary bytes and hostile
vocabularies (the properties are in tests/text/tokenizer_properties.py).

The examples are derandomized, so every run checks the same ones in a few
seconds.
"""

import pytest

from tests.text.tokenizer_properties import PROPERTIES, run_property

# Examples per property: each costs a BertTokenizer call (a few
# milliseconds), and a hostile vocabulary also builds the three tokenizers.
MAX_EXAMPLES = {"unicode text": 40, "bytes": 25, "hostile vocabulary": 15}


@pytest.mark.parametrize("name", sorted(PROPERTIES))
def test_the_tokenizers_agree_on_drawn_examples(name):
    run_property(name, MAX_EXAMPLES[name], derandomize=True)

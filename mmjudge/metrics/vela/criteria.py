"""VELA's criteria, in a leaf module: the head (one output each) and the model both read them.

>>> [CRITERION_NAMES[c] for c in CRITERIA]
['descriptiveness', 'relevance', 'fluency']
"""

# The short names VELA's release uses, in the head's output order, and LongCap-Arena's names for them.
CRITERIA = ("desc", "rel", "flu")
CRITERION_NAMES = {"desc": "descriptiveness", "rel": "relevance", "flu": "fluency"}

"""The Multi30k recipe's problems and files."""

PROBLEM = "translate_ende_multi30k"
PREPARED_PROBLEM = "translate_ende_multi30k_lc_norm_tok"
PREPARED_DIR = "prepared"  # under --work_dir
SPLIT_STEMS = ("train", "val", "test_2016_flickr")
DEFAULT_BPE_MERGES = 10000  # what Multi30k papers with subword-nmt BPE use
TEST_STEM = "test_2016_flickr"
DEV_STEM = "val"


# t2t-datagen flags passed through as given (none given: the data keeps its setting).
SUBWORD_FLAGS = ("subword_samples", "subword_nbest", "subword_alpha")

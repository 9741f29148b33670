// String and text operators: StringNormalizer, StringConcat, StringSplit, RegexFullMatch,
// TfIdfVectorizer.
#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

TEST(StringNormalizerOp, RemovesStopwordsCaseInsensitivelyAndChangesCase) {
    KernelHarness h("StringNormalizer", 10);
    set_attr(h.node(), "case_change_action", std::string("UPPER"));
    set_strings(h.node(), "stopwords", {"monday"});
    h.input(strings({1, 4}, {"Monday", "tuesday", "Straße", "ÉtÉ ñ"}));
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.shape(), (Shape{1, 3}));
    // Latin-1 letters map through the built-in table (no locale needed); ß has no one-letter capital.
    EXPECT_EQ(y.strings(), (std::vector<std::string>{"TUESDAY", "STRAßE", "ÉTÉ Ñ"}));
}

TEST(StringNormalizerOp, CaseSensitiveStopwordsAndEmptyResult) {
    KernelHarness h("StringNormalizer", 10);
    set_attr(h.node(), "case_change_action", std::string("LOWER"));
    set_attr(h.node(), "is_case_sensitive", int64_t{1});
    set_strings(h.node(), "stopwords", {"Monday"});
    h.input(strings({2}, {"Monday", "Monday"}));
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.shape(), (Shape{1}));
    EXPECT_EQ(y.strings(), (std::vector<std::string>{""}));
    KernelHarness g("StringNormalizer", 10);
    set_attr(g.node(), "case_change_action", std::string("LOWER"));
    g.input(strings({2}, {"ΑΒΓ", "ДОМ"}));
    EXPECT_EQ(g.run()[0].strings(), (std::vector<std::string>{"αβγ", "дом"}));
}

TEST(StringNormalizerOp, RejectsBadAttributesAndShapes) {
    KernelHarness h("StringNormalizer", 10);
    set_attr(h.node(), "case_change_action", std::string("TITLE"));
    expect_error([&] { h.create(); }, "attribute 'case_change_action' must be LOWER, UPPER or NONE, but it is 'TITLE'");
    KernelHarness g("StringNormalizer", 10);
    g.input(strings({2, 2}, {"a", "b", "c", "d"}));
    expect_error([&] { g.run(); }, "input must have shape [C] or [1, C], but it has shape (2, 2)");
}

TEST(StringConcatOp, BroadcastsAndKeepsUtf8) {
    KernelHarness h("StringConcat", 20);
    h.input(strings({2, 1}, {"a", "的"})).input(strings({2}, {"x", "中"}));
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.shape(), (Shape{2, 2}));
    EXPECT_EQ(y.strings(), (std::vector<std::string>{"ax", "a中", "的x", "的中"}));
    KernelHarness bad("StringConcat", 20);
    bad.input(strings({2}, {"a", "b"})).input(f32({2}, {1, 2}));
    expect_error([&] { bad.run(); }, "input 1 must be a string tensor, but it is float32");
}

TEST(StringSplitOp, SplitsOnDelimiterOrWhitespaceWithMaxsplit) {
    KernelHarness h("StringSplit", 20, 2);
    set_attr(h.node(), "delimiter", std::string("-"));
    h.input(strings({2}, {"a--b", "c"}));
    auto out = h.run();
    EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
    EXPECT_EQ(out[0].strings(), (std::vector<std::string>{"a", "", "b", "c", "", ""}));
    EXPECT_EQ(values_of(out[1]), (std::vector<double>{3, 1}));
    KernelHarness w("StringSplit", 20, 2);
    set_attr(w.node(), "maxsplit", int64_t{1});
    w.input(strings({1}, {"  the quick  fox "}));
    out = w.run();
    EXPECT_EQ(out[0].strings(), (std::vector<std::string>{"the", "quick  fox "}));  // Python's str.split(None, 1)
    EXPECT_EQ(values_of(out[1]), (std::vector<double>{2}));
    KernelHarness bad("StringSplit", 20, 2);
    set_attr(bad.node(), "maxsplit", int64_t{-2});
    expect_error([&] { bad.create(); }, "attribute 'maxsplit' must not be negative, but it is -2");
}

TEST(RegexFullMatchOp, MatchesWholeStringsOnly) {
    KernelHarness h("RegexFullMatch", 20);
    set_attr(h.node(), "pattern", std::string("[a-z]+@(gmail|yahoo)\\.com"));
    h.input(strings({3}, {"me@gmail.com", "me@gmail.com.au", "you@yahoo.com"}));
    EXPECT_EQ(values_of(h.run()[0]), (std::vector<double>{1, 0, 1}));
    KernelHarness bad("RegexFullMatch", 20);
    set_attr(bad.node(), "pattern", std::string("(unclosed"));
    expect_error([&] { bad.create(); }, "attribute 'pattern' is not a valid regular expression: '(unclosed'");
}

TEST(TfIdfVectorizerOp, CountsUnigramsOnceAndSkipGrams) {
    // Pool: unigrams {2, 3}, bigrams {(2, 3), (3, 4)}; ids 0..3 map to outputs 0..3.
    KernelHarness h("TfIdfVectorizer", 9);
    set_attr(h.node(), "mode", std::string("TF"));
    set_attr(h.node(), "min_gram_length", int64_t{1});
    set_attr(h.node(), "max_gram_length", int64_t{2});
    set_attr(h.node(), "max_skip_count", int64_t{1});
    set_attr(h.node(), "ngram_counts", std::vector<int64_t>{0, 2});
    set_attr(h.node(), "ngram_indexes", std::vector<int64_t>{0, 1, 2, 3});
    set_attr(h.node(), "pool_int64s", std::vector<int64_t>{2, 3, 2, 3, 3, 4});
    // Row 2 3 3 4: unigram 2 once, 3 twice; bigram (2,3) at skip 0 and at skip 1 (2 _ 3);
    // (3,4) at skip 0 and at skip 1 (3 _ 4).
    h.input(Tensor::from_doubles(DataType::kInt64, {4}, {2, 3, 3, 4}));
    expect_close(h.run()[0], {4}, {1, 2, 2, 2});
}

TEST(TfIdfVectorizerOp, IdfModeWeightsPresenceAndRejectsBadPools) {
    KernelHarness h("TfIdfVectorizer", 9);
    set_attr(h.node(), "mode", std::string("IDF"));
    set_attr(h.node(), "min_gram_length", int64_t{1});
    set_attr(h.node(), "max_gram_length", int64_t{1});
    set_attr(h.node(), "ngram_counts", std::vector<int64_t>{0});
    set_attr(h.node(), "ngram_indexes", std::vector<int64_t>{1, 0});
    set_attr(h.node(), "weights", std::vector<float>{0.5f, 4.0f});
    set_strings(h.node(), "pool_strings", {"a", "b"});
    h.input(strings({2, 3}, {"a", "a", "c", "b", "c", "c"}));
    expect_close(h.run()[0], {2, 2}, {0, 0.5, 4, 0});
    KernelHarness bad("TfIdfVectorizer", 9);
    set_attr(bad.node(), "mode", std::string("TF"));
    set_attr(bad.node(), "min_gram_length", int64_t{2});
    set_attr(bad.node(), "max_gram_length", int64_t{2});
    set_attr(bad.node(), "ngram_counts", std::vector<int64_t>{0, 0});
    set_attr(bad.node(), "ngram_indexes", std::vector<int64_t>{0});
    set_attr(bad.node(), "pool_int64s", std::vector<int64_t>{1, 2, 3});
    expect_error([&] { bad.create(); }, "attribute 'ngram_counts' does not split the pool of 3 items into 2-grams");
}

}  // namespace
}  // namespace polygraphy::testing

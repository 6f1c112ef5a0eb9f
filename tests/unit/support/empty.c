/* Keeps the test support library non-empty. */
typedef int kann_test_support_empty;

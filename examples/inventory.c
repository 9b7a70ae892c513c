// The built-in example (scripts/demo): a small inventory with a bug that a
// reverse debugger finds in two commands. rename_item() copies a name that
// is one character too long for `name`, and strcpy's terminator lands in the
// next field, `count`. At the end of the run `stock[2].count` is wrong;
// `watch stock[2].count` then `reverse-continue` stops on the write.
#include <stdio.h>
#include <string.h>

struct item {
  char name[8];
  int count;
};

struct item stock[4] = {{"apple", 3}, {"pear", 5}, {"plum", 7}, {"fig", 2}};
int total;

static int sum_counts(void) {
  int sum = 0;
  for (int i = 0; i < 4; ++i) sum += stock[i].count;
  return sum;
}

static void restock(int i, int amount) { stock[i].count += amount; }

static void rename_item(struct item* it, const char* name) { strcpy(it->name, name); }

int main(void) {
  for (int round = 0; round < 3; ++round) {
    restock(round, round + 1);
    total = sum_counts();
  }
  rename_item(&stock[2], "damson");
  rename_item(&stock[2], "greengage");
  total = sum_counts();
  printf("%d items in stock\n", total);
  return 0;
}

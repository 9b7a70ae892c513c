# The built-in example's debugging session: scripts/demo runs it in gdb's
# batch mode after `file inventory` and `target remote | backstep serve
# --stdio TRACE`. The program prints "114 items in stock", but the counts it
# starts from add up to 17 and it restocks 6: which write broke it?
set pagination off
echo \n# Run to the end of the recording and look at the stock.\n(gdb) continue\n
continue
echo (gdb) print stock\n
print stock
echo \n# stock[2].count is 101, not 10: run backwards to the write that changed it.\n
echo (gdb) watch stock[2].count\n
watch stock[2].count
echo (gdb) reverse-continue\n
reverse-continue
echo (gdb) backtrace\n
backtrace
echo \n# strcpy wrote it, called from rename_item("greengage"): nine characters and\n
echo # a terminator do not fit in name[8]. Back to the line of the call:\n(gdb) reverse-finish\n
reverse-finish
echo \n# One more step back in time: the write before, the restock that made it 10.\n
echo (gdb) reverse-continue\n
reverse-continue
echo (gdb) monitor when\n
monitor when
echo \n# Every write to it, answered from the index (gdb's `eval` puts the address in):\n
echo (gdb) eval "monitor history 0x%lx 4", &stock[2].count\n
eval "monitor history 0x%lx 4", &stock[2].count

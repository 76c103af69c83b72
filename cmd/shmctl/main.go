// Command shmctl manages shmzone zone files from the shell: it creates,
// lists, inspects, edits, checks, repairs, dumps, restores, watches and
// removes them. Run "shmctl help" for its verbs and exit codes.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], osEnv())) }

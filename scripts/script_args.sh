# shellcheck shell=bash
# The argument checks of the bash scripts in scripts/ (sourced; the script sets `script`, its name in
# messages, first), made before anything is measured or built: a refusal is one sentence on stderr,
# `SCRIPT: error: ...`, and exit status 2. scripts/script_args.py does the same for the Python ones.
#
#   args_fail MESSAGE                  the refusal
#   args_value FLAG COUNT              FLAG has a value after it (COUNT: the arguments left, $#)
#   args_whole FLAG VALUE LOW HIGH     VALUE is a whole number from LOW to HIGH (no wrap-around)
#   args_output_file FLAG PATH         PATH can be written as a file (its folder made and probed)
#   args_output_folder FLAG PATH       PATH can be written as a folder
#   args_input_file FLAG PATH          PATH is a readable regular file

args_fail() {
  echo "${script:-${0##*/}}: error: $1" >&2
  exit 2
}

args_value() {
  (($2 >= 2)) || args_fail "$1 needs a value"
}

args_whole() {
  local flag=$1 value=$2 low=$3 high=$4
  # 18 digits at most: bash's arithmetic wraps past 2^63 - 1.
  if [[ ! $value =~ ^[0-9]{1,18}$ ]] || ((10#$value < low || 10#$value > high)); then
    args_fail "$flag must be a whole number from $low to $high, not '$value'"
  fi
}

# args_writable_folder FLAG FOLDER WHAT: FOLDER exists as a folder or can be made, and a probe file
# can be written into it and removed. Folders made for the check are removed again.
args_writable_folder() {
  local flag=$1 what=$3 folder top="" probe
  folder=$(realpath -m -- "$2")
  local existing=$folder
  while [[ ! -e $existing ]]; do
    top=$existing
    existing=$(dirname -- "$existing")
  done
  [[ -d $existing ]] || args_fail "cannot write $flag $what: $existing is not a folder"
  if [[ -n $top ]]; then
    mkdir -p -- "$folder" 2>/dev/null || { rm -rf -- "$top"; args_fail "cannot write $flag $what: cannot make the folder $folder"; }
  fi
  probe=$folder/.probe-$$
  if ! { : >"$probe" && echo x >"$probe"; } 2>/dev/null; then
    rm -f -- "$probe" 2>/dev/null
    [[ -z $top ]] || rm -rf -- "$top"
    args_fail "cannot write $flag $what: a file cannot be written in $folder"
  fi
  rm -f -- "$probe"
  [[ -z $top ]] || rm -rf -- "$top"
}

args_output_file() {
  local flag=$1 path=$2
  [[ -n $path ]] || args_fail "$flag is empty; name a file"
  [[ ! -d $path ]] || args_fail "$flag $path is a folder; name a file"
  [[ ! -e $path && ! -L $path || -f $path ]] || args_fail "$flag $path is not a regular file"
  args_writable_folder "$flag" "$(dirname -- "$(realpath -m -- "$path")")" "$path"
}

args_output_folder() {
  local flag=$1 path=$2
  [[ -n $path ]] || args_fail "$flag is empty; name a folder"
  [[ ! -e $path || -d $path ]] || args_fail "$flag $path exists and is not a folder"
  args_writable_folder "$flag" "$path" "$path"
}

args_input_file() {
  local flag=$1 path=$2
  [[ -e $path ]] || args_fail "$flag $path does not exist"
  [[ -f $path ]] || args_fail "$flag $path is not a regular file"
  [[ -r $path ]] || args_fail "cannot read $flag $path"
}

# shellcheck shell=bash
# gpu-jupyter's table of schedulers: everything that differs between Slurm and LSF.
#
# Each scheduler S is a row of functions named S_<column>; the rest of
# gpu-jupyter calls "${scheduler}_<column>" and knows no scheduler's commands,
# options or states. (Function names are the table: bash 3.2 has no
# associative arrays.) The options themselves are not written here: they come
# from the course's one description, deploy/session.yml, rendered into
# scheduler_options.sh (S_words_<key>, filled in from this script's variables).
# The columns:
#
#   S_program        the command whose presence on the login node means S is there
#   S_check_options  refuses what S cannot be asked (before anything is sent)
#   S_directives     the resources asked for, as the job script's header lines
#   S_submit FILE    the command that submits the job script FILE
#   S_job_id_sed     a sed program that prints the job id in the submit command's answer
#   S_status JOB     the command whose answer's first line with a "|" is STATE|ELAPSED|REASON
#   S_state ST RC ANSWER
#                    that answer as PENDING, RUNNING, GONE (the scheduler says so) or
#                    UNKNOWN (no clear answer: never GONE on a failure)
#   S_forgot ANSWER  true when an answer says the scheduler does not know the job (any more)
#   S_ended FINAL    why the job is gone, in words; true when JupyterLab ended it itself
#   S_cancel JOB     the command that cancels JOB
#   S_sessions       the command that lists this user's sessions as "id|state|elapsed|node"
#   S_find TAG       the command that lists this user's sessions as "id|tag", to find the
#                    job tagged TAG (the job's comment or description) after a lost answer
#
# Commands are shell code for the login node, run in a login shell in the home
# directory; paths are relative to it.
schedulers="slurm lsf"

# The scheduler's words for the keys $2... of the course's description
# (deploy/session.yml, rendered into scheduler_options.sh), one a line, in the
# description's order; a key whose values are empty or 0 adds nothing.
scheduler_words() { # $1 = scheduler, $2... = keys
    local s=$1 keys="${1}_keys" key fields field value wanted
    shift
    wanted=" $* "
    for key in ${!keys}; do
        [[ $wanted == *" $key "* ]] || continue
        fields="${s}_fields_$key"
        for field in ${!fields}; do
            value=${!field-}
            [[ -n $value && $value != 0 ]] || continue 2
        done
        "${s}_words_$key"
    done
}
# Words as a job script's header lines: an option and its values on one line,
# a value with other characters than a name's in double quotes (LSF reads them so).
as_directives() { # $1 = scheduler; the words on stdin
    local word line="" directive="${1}_directive"
    directive=${!directive}
    while IFS= read -r word; do
        if [[ $word == -* ]]; then
            [[ -z $line ]] || echo "$line"
            line="$directive $word"
        elif is_name "$word"; then line+=" $word"
        else line+=" \"$word\""; fi
    done
    [[ -z $line ]] || echo "$line"
}
# The words on stdin, quoted for a command line.
as_arguments() { local word; while IFS= read -r word; do printf ' %q' "$word"; done; }
# The resources of this session as the job script's header lines.
course_directives() { # $1 = scheduler
    local gpu_key=gpus
    if [[ $1 == lsf && $lsf_gpu_syntax == rusage ]]; then gpu_key=gpus_rusage
    elif [[ -n $gpu_type ]]; then gpu_key=gpus_of_type; fi
    scheduler_words "$1" always job_name cores "$gpu_key" memory time partition account \
        reservation qos constraint | as_directives "$1"
}
# The --sched-arg options, last: they may override the script's own choices.
raw_directives() { # $1 = scheduler
    local arg directive="${1}_directive"
    for arg in ${sched_args[@]+"${sched_args[@]}"}; do echo "${!directive} $arg"; done
}
# True when the description has words for the key $2 of scheduler $1.
scheduler_has() { local keys="${1}_keys"; [[ " ${!keys} " == *" $2 "* ]]; }
lab_stopped="JupyterLab shut down (idle for --idle-timeout, or File > Shut Down)"
ended_otherwise() { # $1 = final state
    case $1 in
        PURGED|"") echo "the job ended (the scheduler no longer lists it)" ;;
        *) echo "the job ended ($1)" ;;
    esac
}

# ------------------------------------------------------------------ Slurm
slurm_program() { echo sbatch; }
slurm_check_options() { :; }
slurm_directives() {
    course_directives slurm
    # Slurm does not expand $HOME in #SBATCH lines; sbatch runs in that folder.
    echo "#SBATCH --output=$state_dir/job-%j.out"
    raw_directives slurm
}
# The job script asks for the resources (as the hub's and Open OnDemand's jobs
# do); the launcher's own options are on the command line: the session's tag
# and the warning signal to the job script before the run-time limit.
slurm_submit() { echo "sbatch --parsable$(scheduler_words slurm tag warning | as_arguments) $1"; }
slurm_job_id_sed() { printf '%s\n' 's/^\([0-9][0-9]*\)\(;.*\)*$/\1/p'; } # "123" or "123;cluster"
slurm_status() { echo "squeue -h -t all -j $1 -o '%T|%M|%r'"; }
slurm_state() {
    if [[ $2 != 0 ]]; then
        if slurm_forgot "$3"; then echo GONE; else echo UNKNOWN; fi
        return 0
    fi
    case $1 in
        '') echo GONE ;; # squeue -t all lists a job until it is purged
        RUNNING|COMPLETING) echo RUNNING ;;
        PENDING|CONFIGURING|REQUEUED|REQUEUE_HOLD|REQUEUE_FED|RESIZING|SUSPENDED|STOPPED|SIGNALING|RESV_DEL_HOLD)
            echo PENDING ;;
        COMPLETED|CANCELLED|FAILED|TIMEOUT|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE|OUT_OF_MEMORY|SPECIAL_EXIT|REVOKED)
            echo GONE ;;
        *) echo UNKNOWN ;;
    esac
}
slurm_forgot() { case $1 in *"Invalid job id"*|*"already completed"*) return 0 ;; esac; return 1; }
slurm_ended() {
    case $1 in
        COMPLETED) echo "$lab_stopped"; return 0 ;;
        CANCELLED) echo "the job was cancelled from outside (scancel, or by an administrator)" ;;
        TIMEOUT) echo "the job reached its run-time limit (--time $time_spec)" ;;
        OUT_OF_MEMORY) echo "the job ran out of memory (ask for more with --mem)" ;;
        NODE_FAIL|BOOT_FAIL) echo "the compute node failed" ;;
        PREEMPTED) echo "the job was preempted by the scheduler" ;;
        *) ended_otherwise "$1" ;;
    esac
    return 1
}
slurm_cancel() { echo "scancel $1"; }
slurm_sessions() { echo "squeue -h -u \"\$(id -un)\" -n $job_name -o '%i|%T|%M|%N'"; }
slurm_find() { echo "squeue -h -u \"\$(id -un)\" -n $job_name -o '%i|%k'"; }

# -------------------------------------------------------------------- LSF
lsf_program() { echo bsub; }
lsf_check_options() {
    [[ -z "$gpu_type" || $lsf_gpu_syntax == new ]] \
        || die "--gpu-type needs --lsf-gpu-syntax new (rusage[ngpus_excl_p] cannot name a model)"
    # Refused only when LSF was named: a detected Slurm may honour it.
    [[ -z "$qos" || $scheduler != lsf ]] || scheduler_has lsf qos || die "--qos exists only for Slurm"
}
lsf_directives() {
    course_directives lsf
    echo "#BSUB -o $state_dir/job-%J.out"
    echo "#BSUB -e $state_dir/job-%J.out"
    raw_directives lsf
}
lsf_submit() { # bsub reads #BSUB lines only from a script on stdin
    echo "bsub$(scheduler_words lsf tag warning | as_arguments) < $1"
}
lsf_job_id_sed() { printf '%s\n' 's/^Job <\([0-9][0-9]*\)> is submitted.*/\1/p'; }
lsf_status() { echo "bjobs -noheader -o \"stat run_time pend_reason delimiter='|'\" $1"; }
lsf_state() {
    case $1 in
        RUN) echo RUNNING ;;
        PEND|PSUSP|USUSP|SSUSP|WAIT) echo PENDING ;;
        DONE|EXIT) echo GONE ;;
        UNKWN|ZOMBI|PROV) echo UNKNOWN ;; # e.g. the host lost contact: not the end
        *) if lsf_forgot "$3"; then echo GONE; else echo UNKNOWN; fi ;;
    esac
}
lsf_forgot() {
    case $1 in *"is not found"*|*"already finished"*|*"No matching job"*) return 0 ;; esac
    return 1
}
lsf_ended() {
    case $1 in
        DONE) echo "$lab_stopped"; return 0 ;;
        *) ended_otherwise "$1" ;;
    esac
    return 1
}
lsf_cancel() { echo "bkill $1"; }
lsf_sessions() { echo "bjobs -noheader -J $job_name -o \"jobid stat run_time exec_host delimiter='|'\""; }
lsf_find() { echo "bjobs -noheader -a -J $job_name -o \"jobid job_description delimiter='|'\""; }

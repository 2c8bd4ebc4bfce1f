# shellcheck shell=bash
# gpu-jupyter's table of schedulers: everything that differs between Slurm and LSF.
#
# Each scheduler S is a row of functions named S_<column>; the rest of
# gpu-jupyter calls "${scheduler}_<column>" and knows no scheduler's commands,
# options or states. (Function names are the table: bash 3.2 has no
# associative arrays.) The columns:
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

# "$1$2" as a header line when the value $2 was given.
optional_directive() { if [[ -n $2 ]]; then echo "$1$2"; fi; }
# The --sched-arg options, last: they may override the script's own choices.
raw_directives() { # $1 = directive prefix
    local arg
    for arg in ${sched_args[@]+"${sched_args[@]}"}; do echo "$1 $arg"; done
}
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
    echo "#SBATCH --job-name=$prog"
    echo "#SBATCH --nodes=1"
    echo "#SBATCH --ntasks=1"
    echo "#SBATCH --cpus-per-task=$cores"
    if (( gpus > 0 )); then echo "#SBATCH --gres=gpu:${gpu_type:+$gpu_type:}$gpus"; fi
    echo "#SBATCH --mem=${mem_mb}M"
    echo "#SBATCH --time=$walltime:00"
    optional_directive "#SBATCH --partition=" "$queue"
    optional_directive "#SBATCH --account=" "$account"
    optional_directive "#SBATCH --reservation=" "$reservation"
    optional_directive "#SBATCH --qos=" "$qos"
    optional_directive "#SBATCH --constraint=" "$constraint"
    # Slurm does not expand $HOME in #SBATCH lines; sbatch runs in that folder.
    echo "#SBATCH --output=$state_dir/job-%j.out"
    raw_directives "#SBATCH"
}
# The job script asks for the resources (as the hub's and Open OnDemand's jobs
# do); the launcher's own options are on the command line: the session's tag
# and the warning signal to the job script before the run-time limit.
slurm_submit() { echo "sbatch --parsable --comment=$session_tag --signal=B:USR1@$warn_lead $1"; }
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
slurm_sessions() { echo "squeue -h -u \"\$(id -un)\" -n $prog -o '%i|%T|%M|%N'"; }
slurm_find() { echo "squeue -h -u \"\$(id -un)\" -n $prog -o '%i|%k'"; }

# -------------------------------------------------------------------- LSF
lsf_program() { echo bsub; }
lsf_check_options() {
    [[ -z "$gpu_type" || $lsf_gpu_syntax == new ]] \
        || die "--gpu-type needs --lsf-gpu-syntax new (rusage[ngpus_excl_p] cannot name a model)"
    # Refused only when LSF was named: a detected Slurm may honour it.
    [[ -z "$qos" || $scheduler != lsf ]] || die "--qos exists only for Slurm"
}
lsf_directives() {
    echo "#BSUB -J $prog"
    echo "#BSUB -n $cores"
    echo "#BSUB -R \"span[hosts=1]\""
    echo "#BSUB -R \"rusage[mem=${mem_mb}MB]\""
    echo "#BSUB -M ${mem_mb}MB"
    if (( gpus > 0 )) && [[ $lsf_gpu_syntax == new ]]; then
        echo "#BSUB -gpu \"num=$gpus${gpu_type:+:gmodel=$gpu_type}\""
    elif (( gpus > 0 )); then
        echo "#BSUB -R \"rusage[ngpus_excl_p=$gpus]\""
    fi
    echo "#BSUB -W $walltime"
    optional_directive "#BSUB -q " "$queue"
    optional_directive "#BSUB -P " "$account"
    optional_directive "#BSUB -U " "$reservation"
    if [[ -n "$constraint" ]]; then echo "#BSUB -R \"select[$constraint]\""; fi
    echo "#BSUB -o $state_dir/job-%J.out"
    echo "#BSUB -e $state_dir/job-%J.out"
    raw_directives "#BSUB"
}
lsf_submit() { # bsub reads #BSUB lines only from a script on stdin
    echo "bsub -Jd $session_tag -wa USR1 -wt $(( (warn_lead + 59) / 60 )) < $1"
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
lsf_sessions() { echo "bjobs -noheader -J $prog -o \"jobid stat run_time exec_host delimiter='|'\""; }
lsf_find() { echo "bjobs -noheader -a -J $prog -o \"jobid job_description delimiter='|'\""; }

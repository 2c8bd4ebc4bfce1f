# shellcheck shell=bash
# Generated from deploy/session.yml by deploy/render_schedulers.py: do not edit.
# bin/gpu-jupyter's defaults, its jobs' name and each scheduler's options, filled in
# from the launcher's variables (schedulers.sh: scheduler_words).
# shellcheck disable=SC2034,SC2154 # read through ${!name}; the launcher sets the values
{
default_cores=4
default_gpus=1
default_memory_gb=16
default_hours=2
default_idle_minutes=60
most_warn_minutes=10
job_name=gpu-jupyter
slurm_directive='#SBATCH'
slurm_keys="always job_name tag cores gpus gpus_of_type memory time partition account reservation qos constraint warning"
slurm_fields_always=""
slurm_words_always() { printf '%s\n' "--nodes=1" "--ntasks=1"; }
slurm_fields_job_name="job_name"
slurm_words_job_name() { printf '%s\n' "--job-name=${job_name}"; }
slurm_fields_tag="session_tag"
slurm_words_tag() { printf '%s\n' "--comment=${session_tag}"; }
slurm_fields_cores="cores"
slurm_words_cores() { printf '%s\n' "--cpus-per-task=${cores}"; }
slurm_fields_gpus="gpus"
slurm_words_gpus() { printf '%s\n' "--gres=gpu:${gpus}"; }
slurm_fields_gpus_of_type="gpu_type gpus"
slurm_words_gpus_of_type() { printf '%s\n' "--gres=gpu:${gpu_type}:${gpus}"; }
slurm_fields_memory="mem_mb"
slurm_words_memory() { printf '%s\n' "--mem=${mem_mb}M"; }
slurm_fields_time="walltime"
slurm_words_time() { printf '%s\n' "--time=${walltime}:00"; }
slurm_fields_partition="queue"
slurm_words_partition() { printf '%s\n' "--partition=${queue}"; }
slurm_fields_account="account"
slurm_words_account() { printf '%s\n' "--account=${account}"; }
slurm_fields_reservation="reservation"
slurm_words_reservation() { printf '%s\n' "--reservation=${reservation}"; }
slurm_fields_qos="qos"
slurm_words_qos() { printf '%s\n' "--qos=${qos}"; }
slurm_fields_constraint="constraint"
slurm_words_constraint() { printf '%s\n' "--constraint=${constraint}"; }
slurm_fields_warning="warn_lead"
slurm_words_warning() { printf '%s\n' "--signal=B:USR1@${warn_lead}"; }
lsf_directive='#BSUB'
lsf_keys="always job_name tag cores gpus gpus_of_type gpus_rusage memory time partition account reservation constraint warning"
lsf_fields_always=""
lsf_words_always() { printf '%s\n' "-R" "span[hosts=1]"; }
lsf_fields_job_name="job_name"
lsf_words_job_name() { printf '%s\n' "-J" "${job_name}"; }
lsf_fields_tag="session_tag"
lsf_words_tag() { printf '%s\n' "-Jd" "${session_tag}"; }
lsf_fields_cores="cores"
lsf_words_cores() { printf '%s\n' "-n" "${cores}"; }
lsf_fields_gpus="gpus"
lsf_words_gpus() { printf '%s\n' "-gpu" "num=${gpus}"; }
lsf_fields_gpus_of_type="gpus gpu_type"
lsf_words_gpus_of_type() { printf '%s\n' "-gpu" "num=${gpus}:gmodel=${gpu_type}"; }
lsf_fields_gpus_rusage="gpus"
lsf_words_gpus_rusage() { printf '%s\n' "-R" "rusage[ngpus_excl_p=${gpus}]"; }
lsf_fields_memory="mem_mb"
lsf_words_memory() { printf '%s\n' "-R" "rusage[mem=${mem_mb}MB]" "-M" "${mem_mb}MB"; }
lsf_fields_time="walltime"
lsf_words_time() { printf '%s\n' "-W" "${walltime}"; }
lsf_fields_partition="queue"
lsf_words_partition() { printf '%s\n' "-q" "${queue}"; }
lsf_fields_account="account"
lsf_words_account() { printf '%s\n' "-P" "${account}"; }
lsf_fields_reservation="reservation"
lsf_words_reservation() { printf '%s\n' "-U" "${reservation}"; }
lsf_fields_constraint="constraint"
lsf_words_constraint() { printf '%s\n' "-R" "select[${constraint}]"; }
lsf_fields_warning="warn_minutes"
lsf_words_warning() { printf '%s\n' "-wa" "USR1" "-wt" "${warn_minutes}"; }
}

# The course session for Open OnDemand's ERB files (form.yml.erb, submit.yml.erb).
#
# Reads the same description as the hub: session.yml (a link to deploy/session.yml;
# install the app with `cp -rL` so that it becomes a file) with the site file on
# top ($GPU_COURSE_SITE, else /etc/gpu-course/site.yml). It mirrors
# deploy/course_session.py, which the hub uses; tests/deploy/test_ondemand.py
# checks that both ask Slurm and LSF the same for the same choice.
#
# The scheduler table is checked as it is read (GpuCourse.check): a key the app
# asks for that the table lacks, a key no course job reads, or a word naming a
# value the app does not fill in stops the form and the submission with one line
# naming the file and the entry (OnDemand shows it), instead of a submission
# that silently leaves an option out. tests/deploy/test_ondemand_checks.py.
require "yaml"

module GpuCourse
  HERE = File.dirname(File.realpath(__FILE__))
  DEFAULT_SITE = "/etc/gpu-course/site.yml"
  NAME = /\A[A-Za-z0-9_.+:-]+\z/
  SCHEDULERS = %w[slurm lsf].freeze
  # A value's place in a word of the scheduler table: {cores}.
  FIELD = /\{(\w+)\}/
  # The keys of a scheduler's table that a session asks for, in this order (and gpus,
  # or gpus_of_type when a GPU type is named; warning: the signal before the limit).
  REQUEST_KEYS = %w[always cores memory time partition account reservation].freeze
  ASKED_KEYS = (REQUEST_KEYS + %w[gpus gpus_of_type warning]).freeze
  # The values the app fills into those words (scheduler_words, warning_words).
  FILLED = %w[cores gpus gpu_type memory_mb walltime partition account reservation
              warn_seconds warn_minutes].freeze
  # The form's lists in the site file, and the request field each one fills.
  CHOICES = { "partitions" => "partition", "accounts" => "account",
              "reservations" => "reservation", "gpu_types" => "gpu_type" }.freeze
  LABELS = { "cores" => "CPU cores", "gpus" => "GPUs", "memory_gb" => "Memory (GB)",
             "hours" => "Hours", "partition" => "Partition / queue", "account" => "Account",
             "reservation" => "Reservation", "gpu_type" => "GPU type" }.freeze

  # A session description the app cannot submit with, said in one line.
  class SettingsError < StandardError; end

  def self.merge(base, override)
    base.merge(override) { |_key, a, b| a.is_a?(Hash) && b.is_a?(Hash) ? merge(a, b) : b }
  end

  # session.yml with the site's values on top, checked (SettingsError names what is wrong).
  def self.settings
    path = File.join(HERE, "session.yml")
    session = YAML.safe_load(File.read(path))
    site = ENV.fetch("GPU_COURSE_SITE", DEFAULT_SITE)
    return check(session, path) unless File.exist?(site)

    overrides = YAML.safe_load(File.read(site)) || {}
    refuse_unknown_keys(session, overrides, site)
    check(merge(session, overrides), "#{path} with #{site}")
  end

  # A site's scheduler_options may change the words of the keys session.yml has; a key it
  # does not have (an old name such as memory_gb, or a typo) would be read by nobody, so it
  # is refused, as the hub refuses it (course_session.py), instead of being ignored.
  def self.refuse_unknown_keys(session, site, path)
    tables = session.fetch("scheduler_options")
    known = tables.values.flat_map(&:keys).uniq.sort
    overrides = site.fetch("scheduler_options", nil) || {}
    raise SettingsError, "#{path}: scheduler_options must be a table per scheduler" unless overrides.is_a?(Hash)

    overrides.each do |scheduler, table|
      raise SettingsError, "#{path}: scheduler_options.#{scheduler}: no such scheduler" unless tables.key?(scheduler)
      raise SettingsError, "#{path}: scheduler_options.#{scheduler} must be a table of keys" unless table.nil? || table.is_a?(Hash)

      unknown = ((table || {}).keys - known).sort
      next if unknown.empty?

      raise SettingsError, "#{path}: scheduler_options.#{scheduler} has #{unknown.join(', ')}, " \
                           "which no course job reads (the keys are: #{known.join(', ')})"
    end
  end

  # The settings, if the app can submit with them: its scheduler's table has every key the
  # app asks for, each a list of words naming only values the app fills in; the job name
  # and the warning time are there. Otherwise SettingsError, naming *source* and the entry.
  def self.check(settings, source)
    scheduler = settings.fetch("scheduler", "slurm")
    raise SettingsError, "#{source}: scheduler must be slurm or lsf, not #{scheduler.inspect}" unless SCHEDULERS.include?(scheduler)

    table = (settings["scheduler_options"] || {})[scheduler]
    raise SettingsError, "#{source}: scheduler_options has no table for #{scheduler}" unless table.is_a?(Hash)

    missing = ASKED_KEYS - table.keys
    unless missing.empty?
      raise SettingsError, "#{source}: scheduler_options.#{scheduler} has no #{missing.join(', ')}: " \
                           "a session would be submitted without it"
    end
    ASKED_KEYS.each { |key| check_words(table[key], "#{source}: scheduler_options.#{scheduler}.#{key}") }
    raise SettingsError, "#{source}: job_names has no ondemand" unless (settings["job_names"] || {})["ondemand"].is_a?(String)
    raise SettingsError, "#{source}: warn_minutes must be a whole number" unless settings["warn_minutes"].is_a?(Integer)

    settings
  end

  def self.check_words(entry, where)
    raise SettingsError, "#{where} must be a list of words" unless entry.is_a?(Array) && entry.all?(String)

    unknown = entry.join(" ").scan(FIELD).flatten.uniq - FILLED
    return if unknown.empty?

    raise SettingsError, "#{where} names #{unknown.join(', ')}, which the app does not fill in " \
                         "(it fills: #{FILLED.join(', ')})"
  end

  def self.choices(settings, name)
    (settings.fetch("choices", {}) || {}).fetch(name, nil).to_a.map(&:to_s)
  end

  # The form: number fields within session.yml's limits, the site's lists as menus
  # (a list the site left empty is a hidden, empty field).
  def self.form(settings)
    attributes = {}
    settings["resources"].each do |name, spec|
      attributes[name] = { "widget" => "number_field", "label" => LABELS[name],
                           "value" => spec["default"], "min" => name == "gpus" ? 0 : 1,
                           "max" => spec["max"], "step" => 1, "required" => true }
    end
    CHOICES.each do |list, field|
      options = choices(settings, list)
      attributes[field] = if options.empty?
                            { "widget" => "hidden_field", "value" => "" }
                          else
                            options = [["any", ""]] + options.map { |o| [o, o] } if field == "gpu_type"
                            { "widget" => "select", "label" => LABELS[field], "options" => options }
                          end
    end
    cluster = settings.fetch("ondemand", {}).fetch("cluster", nil) || "*"
    { "cluster" => cluster, "form" => settings["form"], "attributes" => attributes }
  end

  # The student's choice, checked as the hub checks it (course_session.Session.request).
  def self.request(settings, values)
    request = {}
    settings["resources"].each do |name, spec|
      number = Integer(values.fetch(name).to_s, 10)
      low = name == "gpus" ? 0 : 1
      raise ArgumentError, "#{name} must be from #{low} to #{spec['max']}" unless (low..spec["max"]).cover?(number)

      request[name] = number
    end
    CHOICES.each do |list, field|
      value = values.fetch(field, "").to_s.strip
      allowed = value.empty? || (value.match?(NAME) && choices(settings, list).include?(value))
      raise ArgumentError, "#{field} #{value.inspect} is not offered here" unless allowed

      request[field] = value
    end
    raise ArgumentError, "a GPU type needs 1 GPU or more" if !request["gpu_type"].empty? && request["gpus"].zero?

    request
  end

  # The words of the keys of one scheduler's table in session.yml, in the table's order,
  # each {value} filled in; a key whose values are empty or 0 adds nothing (as
  # demos/cluster/schedulers.py fills them for the hub).
  def self.words(table, keys, values)
    table.each_with_object([]) do |(key, entry), found|
      next unless keys.include?(key)

      names = entry.join(" ").scan(FIELD).flatten
      next if names.any? { |name| [nil, "", 0].include?(values[name]) }

      found.concat(entry.map { |word| word.gsub(FIELD) { values.fetch(Regexp.last_match(1)).to_s } })
    end
  end

  # The scheduler's options for a checked request, from session.yml's table.
  def self.scheduler_words(settings, request, scheduler = settings.fetch("scheduler", "slurm"))
    hours = request["hours"]
    values = request.merge("memory_mb" => request["memory_gb"] * 1024, "walltime" => "#{hours}:00")
    keys = REQUEST_KEYS + [request["gpu_type"].empty? ? "gpus" : "gpus_of_type"]
    words(settings["scheduler_options"].fetch(scheduler), keys, values)
  end

  # The options that have the scheduler signal the job before its time limit;
  # before.sh passes the signal on to JupyterLab, which warns the student.
  def self.warning_words(settings, scheduler = settings.fetch("scheduler", "slurm"))
    minutes = Integer(settings["warn_minutes"])
    values = { "warn_minutes" => minutes, "warn_seconds" => minutes * 60 }
    words(settings["scheduler_options"].fetch(scheduler), ["warning"], values)
  end

  # What start-course.sh and the app's scripts need in the job.
  def self.job_environment(settings)
    edition = settings.fetch("edition", "/shared/gpu-course")
    mode = settings["mode"]
    workspace = settings["workspace"]
    {
      "COURSE_EDITION" => edition,
      "COURSE_VENV" => settings["venv"] || File.join(edition, ".venv"),
      "COURSE_MODULES" => (settings["modules"] || []).join(" "),
      "COURSE_WORKSPACE" => workspace["folder"],
      "COURSE_COPY" => workspace["copy"].join(" "),
      "COURSE_CONFIG_PATH" => mode["config_path"].map { |p| File.join(edition, p) }.join(":"),
      "COURSE_DATA_PATH" => mode["data_path"].map { |p| File.join(edition, p) }.join(":"),
      "COURSE_DEFAULT_URL" => mode["default_url"],
      "COURSE_IDLE_SECONDS" => (settings["idle_minutes"].to_f * 60).round.to_s,
      "COURSE_WARN_SECONDS" => (Integer(settings["warn_minutes"]) * 60).to_s,
      "COURSE_ONDEMAND_ORIGIN" => settings.fetch("ondemand", {}).fetch("origin", "")
    }
  end

  # submit.yml: OnDemand's basic template, the scheduler options (the warning
  # signal included) and the environment.
  def self.submit(settings, values)
    request = request(settings, values)
    {
      "batch_connect" => { "template" => "basic" },
      "script" => {
        "job_name" => settings["job_names"]["ondemand"],
        "native" => scheduler_words(settings, request) + warning_words(settings),
        "job_environment" => job_environment(settings),
        "copy_environment" => false
      }
    }
  end
end

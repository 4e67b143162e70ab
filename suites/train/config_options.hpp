#pragma once
// The training configuration as command-line options, for every program that takes
// one (the proxy, its checks): each key of model::train_config_keys() as --key-name
// VALUE (--micro-batch for micro_batch; a flag for the on/off keys), each parsed by
// model::set_train_config_key, the parser of `sextant predict --train key=value,...`.
// A bad value throws sextant::UsageError out of CLI::App::parse.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>

#include "models/json.hpp"
#include "models/train_plan.hpp"

namespace sextant::train {

// config's values when called are the defaults --help shows.
inline void add_config_options(CLI::App& app, model::TrainConfig& config) {
  nlohmann::json defaults = config;
  for (auto& [key, value] : defaults.items())  // 1048576, not 1048576.0
    if (value.is_number_float() && value.get<double>() == static_cast<double>(value.get<long long>()))
      value = value.get<long long>();
  for (const auto& key : model::train_config_keys()) {
    std::string flag = "--" + std::string(key.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    const std::string name = key.name;
    if (key.on_off) {
      app.add_flag_callback(flag, [&config, name] { model::set_train_config_key(config, name, "1"); }, key.help);
    } else {
      const auto& d = defaults.at(name);
      app.add_option_function<std::string>(
             flag, [&config, name](const std::string& v) { model::set_train_config_key(config, name, v); },
             key.help)
          ->type_name(d.is_string() ? "TEXT" : "NUMBER")
          ->default_str(d.is_string() ? d.get<std::string>() : d.dump());
    }
  }
}

}  // namespace sextant::train

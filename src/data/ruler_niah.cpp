#include "data/ruler_niah.h"

#include "util/text.h"

namespace headroom::data {

std::pair<std::string, std::string> niah_template(const std::string& type_plural, int n_answers) {
  std::string tmpl = kNiahTemplate, prefix = kNiahAnswerPrefix, type = type_plural;
  if (n_answers == 1) {
    // RULER's replacements, in its order, applied to the template before the context goes in.
    for (std::string* s : {&tmpl, &prefix}) {
      *s = replace_all(*s, "Some", "A");
      *s = replace_all(*s, "are all", "is");
      *s = replace_all(*s, "are", "is");
      *s = replace_all(*s, "answers", "answer");
    }
    type.pop_back();
  }
  return {fill(tmpl, {{"type_needle_v", type}}), fill(prefix, {{"type_needle_v", type}})};
}

std::string niah_query(const std::vector<std::string>& keys) {
  if (keys.size() == 1) return keys[0];
  std::string q;
  for (size_t i = 0; i + 1 < keys.size(); ++i) q += (i ? ", " : "") + keys[i];
  return q + ", and " + keys.back();
}

std::string niah_needle(const std::string& type_plural, const std::string& key, const std::string& value) {
  return "One of the special magic " + type_plural + " for " + key + " is: " + value + ".";
}

}  // namespace headroom::data
